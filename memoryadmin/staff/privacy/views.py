"""Privacy requests for staff: the list by due date, a page per request with its timeline,
recording a request that came by phone, e-mail or letter, working it with the existing tools,
and the CSV for auditors. Editors record and work requests; privacy admins also refuse, extend
and reopen; viewers read. Thin: services decide and record, selectors read."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone

from memoryadmin.access.choices import AccessKind
from memoryadmin.facts.actors import Actor
from memoryadmin.http_methods import form_page, post_only, read_only
from memoryadmin.privacy import clock, flows, requesters, selectors, services
from memoryadmin.privacy.errors import PrivacyError, RequestInvalid
from memoryadmin.privacy.models import WORKING, PrivacyRequest, RequestKind, RequestStatus
from memoryadmin.privacy.package import traveller_package

from ..roles import EDITOR, PRIVACY_ADMIN, VIEWER, has_role
from ..templatetags.staff_time import day
from ..views.common import page_of, query_without_page, record_access, staff_required
from .forms import (
    CompleteForm,
    CsvForm,
    ExtendForm,
    FilterForm,
    IdentityForm,
    ReasonForm,
    RecordForm,
    RefuseForm,
)

PER_PAGE = 50


def _actor(request: HttpRequest) -> Actor:
    return Actor.staff(request.user)


def _request_or_404(number: str) -> PrivacyRequest:
    found = selectors.privacy_request_get(number)
    if found is None:
        raise Http404("No such request.")
    return found


def _put_back(form: forms.Form, error: PrivacyError) -> None:
    """A service's field messages onto the form (a field it does not have: the summary)."""
    if not error.fields:
        form.add_error(None, error.message)
    for name, message in error.fields.items():
        form.add_error(name if name in form.fields else None, message)


@staff_required(VIEWER)
@read_only
def request_list(request: HttpRequest) -> HttpResponse:
    form = FilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    rows = selectors.privacy_requests(**{k: v for k, v in filters.items() if v})
    today = clock.today()
    open_rows = list(
        rows.filter(status__in=WORKING, duplicate_of=None).order_by("due_on", "id")[:500]
    )
    page = page_of(request, rows, PER_PAGE)
    return render(
        request,
        "staff/privacy/list.html",
        {
            "form": form,
            "overdue": [r for r in open_rows if selectors.request_state(r, today) == "overdue"],
            "due_soon": [r for r in open_rows if selectors.request_state(r, today) == "due_soon"],
            "page": page,
            "query": query_without_page(request),
            "today": today,
            "csv_form": CsvForm(initial={"start": today.replace(day=1), "end": today}),
            "can_record": has_role(request.user, EDITOR),
        },
    )


@staff_required(EDITOR)
@form_page
def request_record(request: HttpRequest) -> HttpResponse:
    form = RecordForm(
        request.POST or None,
        initial={
            "received_on": clock.today(),
            "subject_id": request.GET.get("subject", "")[:128],
        },
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        if data["received_on"] > clock.today():
            form.add_error("received_on", "The received date cannot be in the future.")
        else:
            try:
                created = services.privacy_request_record(
                    subject_id=data["subject_id"],
                    kind=data["kind"],
                    channel=data["channel"],
                    received_on=data["received_on"],
                    actor=_actor(request),
                    note=data["note"],
                    identity_check=data["identity_check"],
                    identity_checked=data["identity_checked"],
                    agent_name=data["agent_name"],
                    agent_relation=data["agent_relation"],
                    agent_authority=data["agent_authority"],
                )
            except RequestInvalid as error:
                _put_back(form, error)
            else:
                messages.success(request, _recorded_words(created))
                return redirect("privacy:request", number=created.number)
    status = 400 if request.method == "POST" else 200
    return render(request, "staff/privacy/record.html", {"form": form}, status=status)


def _recorded_words(created: PrivacyRequest) -> str:
    if created.duplicate_of is not None:
        return (
            f"Recorded {created.number} as a duplicate of {created.duplicate_of.number}: it is "
            "answered with it and has no clock of its own."
        )
    return f"Recorded {created.number}. It is due on {day(created.due_on)}."


def _detail(
    request: HttpRequest, found: PrivacyRequest, complete_form: forms.Form, status: int = 200
) -> HttpResponse:
    facts_left = selectors.subject_fact_count(found.subject_id)
    held = facts_left or selectors.erased_rows_remaining(found.subject_id, timezone.now())
    receipt = found.evidence.get("receipt", "")
    return render(
        request,
        "staff/privacy/detail.html",
        {
            "req": found,
            "state": selectors.request_state(found),
            "steps": selectors.request_steps(found),
            "deliveries": selectors.receipt_deliveries(receipt),
            "deadline": clock.deadline(found.due_on),
            "working": found.status in WORKING,
            "closed": found.status in (RequestStatus.COMPLETED, RequestStatus.REFUSED),
            "can_work": has_role(request.user, EDITOR),
            "can_admin": has_role(request.user, PRIVACY_ADMIN),
            "complete_form": complete_form,
            "facts_left": facts_left,
            "nothing_held": not held and not receipt,
            "known": selectors.subject_known(found.subject_id),
            # A restriction's evidence names its fact by the same keyed hash: the Fact row
            # says it, not a "Correction" row.
            "correction": selectors.correction_shown(found.subject_id, found.evidence or {})
            if found.kind != RequestKind.RESTRICTION
            else None,
            "duplicates": selectors.request_duplicates(found),
            "export_languages": settings.LANGUAGES,
            # A restriction of one fact: the fact (with the traveller's words) while it is held.
            "restricted_fact": selectors.fact_by_hash(found.subject_id, found.evidence["key_hash"])
            if found.kind == RequestKind.RESTRICTION and found.evidence.get("key_hash")
            else None,
        },
        status=status,
    )


@staff_required(VIEWER)
@read_only
def request_detail(request: HttpRequest, number: str) -> HttpResponse:
    found = _request_or_404(number)
    record_access(request, AccessKind.PRIVACY_REQUEST, [found.subject_id])
    return _detail(request, found, CompleteForm())


@staff_required(EDITOR)
@post_only
def request_export(request: HttpRequest, number: str) -> HttpResponse:
    """Export for the traveller: the same package the portal's download gives, in the language
    chosen (else English), its SHA-256 attached as evidence."""
    found = _request_or_404(number)
    if found.kind != RequestKind.ACCESS or found.status not in WORKING:
        messages.error(request, "Only an open access request has an export.")
        return redirect("privacy:request", number=number)
    if found.identity_unverified:  # nothing leaves for someone not yet identified
        messages.error(request, requesters.UNVERIFIED_MESSAGE)
        return redirect("privacy:request", number=number)
    language = request.POST.get("language", "")
    if language not in dict(settings.LANGUAGES):
        language = settings.LANGUAGE_CODE
    package = traveller_package(found.subject_id, language=language)
    record_access(request, AccessKind.EXPORT, [found.subject_id])
    flows.privacy_export_record(
        subject_id=found.subject_id,
        request_id=found.pk,
        sha256=package.sha256,
        actor=_actor(request),
    )
    response = HttpResponse(package.body, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{package.filename}"'
    return response


def _form_action(
    request: HttpRequest,
    number: str,
    *,
    form_class: type[forms.Form],
    template: str,
    act,
    done: str,
    extra=None,
) -> HttpResponse:
    """A confirmation page with one form: GET shows it, POST runs `act(found, data)`."""
    found = _request_or_404(number)
    form = form_class(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            act(found, form.cleaned_data)
        except RequestInvalid as error:
            _put_back(form, error)
        except PrivacyError as error:
            messages.error(request, error.message)
            return redirect("privacy:request", number=number)
        else:
            messages.success(request, done.format(number=found.number))
            return redirect("privacy:request", number=number)
    status = 400 if request.method == "POST" else 200
    context = {
        "req": found,
        "form": form,
        **(extra(found) if extra else {}),
    }
    return render(request, template, context, status=status)


@staff_required(EDITOR)
@post_only
def request_complete(request: HttpRequest, number: str) -> HttpResponse:
    """Close with the evidence the service gathers; what is still to do is shown beside the
    form, on the request's page (an erasure with memory left: the count and the erase step)."""
    found = _request_or_404(number)
    form = CompleteForm(request.POST)
    form.is_valid()
    try:
        services.privacy_request_complete(
            request_id=found.pk, actor=_actor(request), note=form.cleaned_data.get("note", "")
        )
    except PrivacyError as error:
        _put_back(form, error)
        return _detail(request, _request_or_404(number), form, status=400)
    messages.success(request, f"Closed {found.number} with its evidence.")
    return redirect("privacy:request", number=number)


@staff_required(EDITOR)
@form_page
def request_erase(request: HttpRequest, number: str) -> HttpResponse:
    """Forget everything for an erasure request (on hold under a legal hold), then verify."""
    actor = _actor(request)

    def act(found: PrivacyRequest, data: dict) -> None:
        reason = data.get("reason") or ""
        if not reason.strip():
            raise RequestInvalid(
                "Give a reason.", fields={"reason": "Say why, e.g. the traveller's call."}
            )
        outcome = flows.privacy_forget(
            subject_id=found.subject_id, actor=actor, reason=reason, request_id=found.pk
        )
        if outcome.receipt is not None:
            flows.privacy_verify_erasure(request_id=found.pk, actor=actor)

    return _form_action(
        request,
        number,
        form_class=ReasonForm,
        template="staff/privacy/erase.html",
        act=act,
        done="Carried out {number}: see its evidence below.",
        extra=lambda found: {"facts_left": selectors.subject_fact_count(found.subject_id)},
    )


@staff_required(EDITOR)
@form_page
def request_identity(request: HttpRequest, number: str) -> HttpResponse:
    """Record how a "not yet verified" traveller's identity was checked."""
    return _form_action(
        request,
        number,
        form_class=IdentityForm,
        template="staff/privacy/identity.html",
        act=lambda found, data: requesters.privacy_request_identity_verify(
            request_id=found.pk,
            actor=_actor(request),
            identity_check=data["identity_check"],
            identity_checked=data.get("identity_checked", ""),
        ),
        done="Recorded the identity check of {number}: it can be worked now.",
    )


@staff_required(EDITOR)
@form_page
def request_split(request: HttpRequest, number: str) -> HttpResponse:
    """A duplicate becomes a request of its own, with a reason and its own clock."""
    return _form_action(
        request,
        number,
        form_class=ReasonForm,
        template="staff/privacy/split.html",
        act=lambda found, data: requesters.privacy_request_split(
            request_id=found.pk, actor=_actor(request), reason=data.get("reason", "")
        ),
        done="Split {number} off: it has its own clock now.",
        extra=lambda found: {"new_due_on": clock.due_on(found.received_on)},
    )


@staff_required(PRIVACY_ADMIN)
@form_page
def request_refuse(request: HttpRequest, number: str) -> HttpResponse:
    return _form_action(
        request,
        number,
        form_class=RefuseForm,
        template="staff/privacy/refuse.html",
        act=lambda found, data: services.privacy_request_refuse(
            request_id=found.pk, actor=_actor(request), ground=data.get("ground", "")
        ),
        done="Refused {number}. The ground is in its timeline.",
    )


@staff_required(PRIVACY_ADMIN)
@form_page
def request_extend(request: HttpRequest, number: str) -> HttpResponse:
    return _form_action(
        request,
        number,
        form_class=ExtendForm,
        template="staff/privacy/extend.html",
        act=lambda found, data: services.privacy_request_extend(
            request_id=found.pk,
            actor=_actor(request),
            months=data["months"],
            reason=data.get("reason", ""),
            told_on=data.get("told_on"),
        ),
        done="Extended {number}.",
    )


@staff_required(PRIVACY_ADMIN)
@form_page
def request_reopen(request: HttpRequest, number: str) -> HttpResponse:
    return _form_action(
        request,
        number,
        form_class=ReasonForm,
        template="staff/privacy/reopen.html",
        act=lambda found, data: services.privacy_request_reopen(
            request_id=found.pk, actor=_actor(request), reason=data.get("reason", "")
        ),
        done="Reopened {number}.",
    )


@staff_required(VIEWER)
@read_only
def requests_csv(request: HttpRequest) -> HttpResponse:
    form = CsvForm(request.GET)
    if not form.is_valid():
        errors = "; ".join(f"{name}: {' '.join(msgs)}" for name, msgs in form.errors.items())
        return HttpResponse(
            f"Choose a date range ({errors}).", status=400, content_type="text/plain; charset=utf-8"
        )
    start, end = form.cleaned_data["start"], form.cleaned_data["end"]
    response = HttpResponse(
        selectors.requests_csv(start, end), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = (
        f'attachment; filename="privacy-requests-{start}-to-{end}.csv"'
    )
    return response


def list_url() -> str:
    return reverse("privacy:list")
