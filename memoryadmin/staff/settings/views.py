"""Privacy admins' pages. Thin: forms check shape, services decide and record, selectors read.
Every view requires the privacy_admin role; every change is a POST that redirects."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse

from memoryadmin.api.models import ServiceToken
from memoryadmin.api.tokens import token_issue, token_revoke, tokens_list
from memoryadmin.facts import retention, selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactInvalid, WriteFilterMisconfigured
from memoryadmin.facts.models import RetentionRule, RetentionRun
from memoryadmin.facts.validation import MemoryWriteFilter
from memoryadmin.http_methods import form_page, post_only, read_only
from memoryadmin.privacy import flows as privacy_flows
from memoryadmin.privacy import selectors as privacy_selectors
from memoryadmin.staff import selectors as staff_selectors
from memoryadmin.staff.roles import PRIVACY_ADMIN
from memoryadmin.staff.views.common import page_of, staff_required

from .forms import (
    LegalHoldForm,
    MemorySettingsForm,
    ReasonForm,
    RetentionRuleForm,
    TokenForm,
    TryPatternForm,
    UseRetentionForm,
)

admin_required = staff_required(PRIVACY_ADMIN)
HISTORY_PER_PAGE = 50
NEW_SECRET_SESSION_KEY = "settings.new_token_secret"


def _actor(request: HttpRequest) -> Actor:
    return Actor.staff(request.user)


def _run_context(run: RetentionRun | None) -> dict[str, object]:
    return {"run": run, "run_url": reverse("settings:run", args=[run.pk]) if run else ""}


# --- memory settings ---------------------------------------------------------------------------


@admin_required
@form_page
def memory_settings(request: HttpRequest) -> HttpResponse:
    row = selectors.memory_settings()
    form = MemorySettingsForm(request.POST or None, initial=MemorySettingsForm.initial_from(row))
    form.fields["memory_enabled"].label = (
        "Memory is on for every traveller (untick to turn it off)"
        if row.memory_enabled
        else "Memory is off for every traveller (tick to turn it on)"
    )
    if request.method == "POST" and form.is_valid():
        turning_off = row.memory_enabled and not form.cleaned_data["memory_enabled"]
        if turning_off and request.POST.get("confirm_off") != "yes":
            # Everyone's memory stops at once: ask first, with how many travellers it affects.
            return render(
                request,
                "staff/settings/memory_off_confirm.html",
                {
                    "form": form,
                    "travellers": staff_selectors.travellers_with_memory_count(),
                    "section": "memory",
                },
            )
        try:
            services.memory_settings_update(
                values=form.values(), actor=_actor(request), reason=form.cleaned_data["reason"]
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(
                request, "Saved the memory settings. The change is in the policy history."
            )
            return redirect("settings:memory")
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "staff/settings/memory.html",
        {
            "form": form,
            "try_form": TryPatternForm(),
            "use_form": _use_form(row),
            "settings_row": row,
            "section": "memory",
        },
        status=status,
    )


def _use_form(row: object) -> UseRetentionForm:
    return UseRetentionForm(initial={"days": selectors.use_retention_days(row)}, prefix="use")


@admin_required
@post_only
def use_retention(request: HttpRequest) -> HttpResponse:
    """How long use receipts are kept: a form of its own on the memory settings page."""
    row = selectors.memory_settings()
    form = UseRetentionForm(request.POST, prefix="use")
    if form.is_valid():
        try:
            services.use_retention_update(
                days=form.cleaned_data["days"],
                actor=_actor(request),
                reason=form.cleaned_data["reason"],
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(
                request,
                "Saved how long use receipts are kept. The change is in the policy history.",
            )
            return redirect("settings:memory")
    return render(
        request,
        "staff/settings/memory.html",
        {
            "form": MemorySettingsForm(initial=MemorySettingsForm.initial_from(row)),
            "try_form": TryPatternForm(),
            "use_form": form,
            "settings_row": row,
            "section": "memory",
        },
        status=400,
    )


@admin_required
@post_only
def try_pattern(request: HttpRequest) -> HttpResponse:
    """Says whether a sample would be blocked. The sample is not stored or logged."""
    row = selectors.memory_settings()
    try_form = TryPatternForm(request.POST)
    verdict = None
    if try_form.is_valid():
        try:
            verdict = MemoryWriteFilter(row.blocked_patterns).check(
                "", try_form.cleaned_data["sample"]
            )
        except WriteFilterMisconfigured as exc:  # saved some other way; the form refuses it
            try_form.add_error("sample", str(exc))
    return render(
        request,
        "staff/settings/memory.html",
        {
            "form": MemorySettingsForm(initial=MemorySettingsForm.initial_from(row)),
            "try_form": try_form,
            "verdict": verdict,
            "use_form": _use_form(row),
            "settings_row": row,
            "section": "memory",
        },
        status=200 if verdict is not None else 400,
    )


# --- retention rules ---------------------------------------------------------------------------


@admin_required
@read_only
def retention_rules(request: HttpRequest) -> HttpResponse:
    rules = retention.retention_rules()
    enabled = [rule for rule in rules if rule.enabled]
    return render(
        request,
        "staff/settings/retention.html",
        {
            "rules": rules,
            "winners": retention.winner_table(enabled),
            "section": "retention",
            **_run_context(retention.retention_run_latest()),
        },
    )


def _rule_or_404(rule_id: int) -> RetentionRule:
    rule = RetentionRule.objects.filter(pk=rule_id).first()
    if rule is None:
        raise Http404("No such rule.")
    return rule


@admin_required
@form_page
def retention_rule_edit(request: HttpRequest, rule_id: int | None = None) -> HttpResponse:
    """GET: the form. POST "preview": validate and show what the change would do. POST
    "confirm": save, start the recompute, back to the list to watch it."""
    rule = _rule_or_404(rule_id) if rule_id is not None else None
    initial = RetentionRuleForm.initial_from(rule) if rule else None
    form = RetentionRuleForm(request.POST or None, initial=initial)
    context = {"form": form, "rule": rule, "section": "retention"}
    if request.method == "GET" or not form.is_valid():
        return render(
            request,
            "staff/settings/rule_form.html",
            context,
            status=400 if request.method == "POST" else 200,
        )
    try:
        proposal = retention.check_rule(form.proposal(rule_id))
        overrides = [
            o
            for o in retention.sensitive_overrides(retention.rules_after(proposal=proposal))
            if proposal.pk in (o.rule.pk, o.sensitive_rule.pk)
        ]
        if (
            request.POST.get("action") == "confirm"
            and overrides
            and request.POST.get("keep_sensitive_longer") != "yes"
        ):
            # Saving would keep sensitive facts longer than the sensitive-facts rule: the
            # preview again, with the warning and the box to tick.
            preview = retention.preview(retention.rules_after(proposal=proposal))
            return render(
                request,
                "staff/settings/rule_preview.html",
                {
                    **context,
                    "proposal": proposal,
                    "preview": preview,
                    "overrides": overrides,
                    "override_error": True,
                    "ttl_label": RetentionRule(ttl_days=proposal.ttl_days).ttl_label,
                },
                status=400,
            )
        if request.POST.get("action") == "confirm":
            _, run = services.retention_rule_save(
                proposal=proposal, actor=_actor(request), reason=form.cleaned_data["reason"]
            )
            messages.success(
                request,
                f"Saved the rule “{proposal.name}”. Expiry dates are being recomputed; "
                "progress is shown below.",
            )
            return redirect("settings:retention")
    except ValidationError as exc:
        form.add_error(None, exc)
        return render(request, "staff/settings/rule_form.html", context, status=400)
    if request.POST.get("action") == "change":
        return render(request, "staff/settings/rule_form.html", context)
    preview = retention.preview(retention.rules_after(proposal=proposal))
    return render(
        request,
        "staff/settings/rule_preview.html",
        {
            **context,
            "proposal": proposal,
            "preview": preview,
            "overrides": overrides,
            "ttl_label": RetentionRule(ttl_days=proposal.ttl_days).ttl_label,
        },
    )


@admin_required
@form_page
def retention_rule_delete(request: HttpRequest, rule_id: int) -> HttpResponse:
    rule = _rule_or_404(rule_id)
    form = ReasonForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            services.retention_rule_delete(
                rule_id=rule.pk, actor=_actor(request), reason=form.cleaned_data["reason"]
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(
                request, f"Deleted the rule “{rule.name}”. Expiry dates are being recomputed."
            )
            return redirect("settings:retention")
    preview = retention.preview(retention.rules_after(delete_pk=rule.pk))
    return render(
        request,
        "staff/settings/rule_delete.html",
        {"form": form, "rule": rule, "preview": preview, "section": "retention"},
        status=400 if request.method == "POST" else 200,
    )


@admin_required
@read_only
def retention_run(request: HttpRequest, run_id: int) -> HttpResponse:
    """Progress of a recompute, for the page's script (JSON)."""
    run = retention.retention_run_get(run_id)
    if run is None:
        raise Http404("No such run.")
    return JsonResponse(
        {
            "id": run.pk,
            "status": run.status,
            "status_label": run.get_status_display(),
            "done": run.done,
            "total": max(run.total, run.done),
            "finished": run.is_finished,
        }
    )


def _traveller_url(subject_id: str) -> str:
    """Back to the traveller's page on the dashboard, or to this page if there is none."""
    try:
        return reverse("staff:traveller", args=[subject_id])
    except NoReverseMatch:
        return reverse("settings:legal_hold", args=[subject_id])


# --- legal hold --------------------------------------------------------------------------------


@admin_required
@form_page
def legal_hold(request: HttpRequest, subject_id: str) -> HttpResponse:
    subject = selectors.subject_get(subject_id)
    if subject is None:
        raise Http404("No such traveller.")
    form = LegalHoldForm(
        request.POST or None, initial={"hold": "lift" if subject.legal_hold else "place"}
    )
    if request.method == "POST" and form.is_valid():
        hold = form.cleaned_data["hold"] == "place"
        try:
            # Lifting it carries out the erasure requests that waited for it.
            carried = privacy_flows.privacy_legal_hold_set(
                subject_id=subject_id,
                hold=hold,
                actor=_actor(request),
                reason=form.cleaned_data["reason"],
            )
        except FactInvalid as exc:
            for name, message in exc.fields.items():
                form.add_error(name if name in form.fields else None, message)
        else:
            for waiting in carried:  # committed: verify each erasure
                privacy_flows.privacy_verify_erasure(request_id=waiting.pk, actor=_actor(request))
            messages.success(
                request,
                "Placed a legal hold: retention sweeps and rule changes skip this traveller."
                if hold
                else "Lifted the legal hold: retention applies to this traveller again."
                + (
                    f" Carried out {len(carried)} erasure request(s) that waited for it."
                    if carried
                    else ""
                ),
            )
            return redirect(_traveller_url(subject_id))
    return render(
        request,
        "staff/settings/legal_hold.html",
        {"form": form, "subject": subject, "section": "hold"},
        status=400 if request.method == "POST" else 200,
    )


# --- service tokens ----------------------------------------------------------------------------


@admin_required
@form_page
def tokens(request: HttpRequest) -> HttpResponse:
    form = TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            token, secret = token_issue(
                name=form.cleaned_data["name"],
                scopes=form.cleaned_data["scopes"],
                created_by=request.user,
                throttle_rate=form.cleaned_data["throttle_rate"],
                actor=_actor(request),
                reason=form.cleaned_data["reason"],
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            # Shown once, in the answer to this POST; stored nowhere (not even the session,
            # whose row would hold it at rest until the next page was opened).
            return _token_created_page(request, token, secret, status=201)
    return render(
        request,
        "staff/settings/tokens.html",
        {"form": form, "tokens": tokens_list(), "section": "tokens"},
        status=400 if request.method == "POST" else 200,
    )


@admin_required
@read_only
def token_created(request: HttpRequest, token_id: int) -> HttpResponse:
    token = ServiceToken.objects.filter(pk=token_id).first()
    if token is None:
        raise Http404("No such token.")
    request.session.pop(NEW_SECRET_SESSION_KEY, None)  # a session from before this change
    return _token_created_page(request, token, None)


def _token_created_page(
    request: HttpRequest, token: ServiceToken, secret: str | None, *, status: int = 200
) -> HttpResponse:
    response = render(
        request,
        "staff/settings/token_created.html",
        {"token": token, "secret": secret, "section": "tokens"},
        status=status,
    )
    response["Cache-Control"] = "no-store"
    return response


@admin_required
@form_page
def token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    token = ServiceToken.objects.filter(pk=token_id).first()
    if token is None:
        raise Http404("No such token.")
    form = ReasonForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        token_revoke(token=token, actor=_actor(request), reason=form.cleaned_data["reason"])
        messages.success(request, f"Revoked “{token.name}”. It stops working at once.")
        return redirect("settings:tokens")
    return render(
        request,
        "staff/settings/token_revoke.html",
        {"form": form, "token": token, "section": "tokens"},
        status=400 if request.method == "POST" else 200,
    )


# --- history -----------------------------------------------------------------------------------


def _recipients_now(events: Any) -> None:
    """An erasure's webhook recipients as the request's page reads them (the delivery log, else
    what the request kept), in place of the snapshot taken when the step was recorded: the
    history then says where each acknowledgement stands, as the request's page does."""
    receipts = [
        (event.after or {}).get("receipt", "")
        for event in events
        if "recipients" in (event.after or {})
    ]
    live = privacy_selectors.receipts_deliveries(receipts)
    for event in events:
        after = event.after or {}
        if "recipients" in after and after.get("receipt") in live:
            event.after = {
                **after,
                "recipients": {
                    row["recipient"]: {
                        "acknowledged": row["acknowledged"],
                        "status": row["status"],
                        "at": row["at"],
                        "attempts": row["attempts"],
                    }
                    for row in live[after["receipt"]]
                },
            }


@admin_required
@read_only
def history(request: HttpRequest) -> HttpResponse:
    kind = request.GET.get("kind", "")
    kind = kind if kind in selectors.POLICY_KINDS else ""
    page = page_of(request, selectors.policy_history(kind=kind), HISTORY_PER_PAGE)
    _recipients_now(page.object_list)
    return render(
        request,
        "staff/settings/history.html",
        {
            "page": page,
            "events": page.object_list,
            "kinds": [(name, label) for name, (label, _) in selectors.POLICY_KINDS.items()],
            "kind": kind,
            "qs": f"kind={kind}" if kind else "",
            "section": "history",
        },
    )
