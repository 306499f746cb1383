"""The support dashboard. Every view checks the staff role first, reads through
`staff.selectors` and `facts.selectors`, writes through `facts.services` with the signed-in user
as actor, and answers a POST with a redirect and a flash message (or the form again, with its
errors, and a 4xx)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from datetime import time as dt_time
from functools import wraps
from typing import Any
from urllib.parse import quote, urlencode

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import RFC3986_SUBDELIMS, url_has_allowed_host_and_scheme
from django.utils.timesince import timesince
from django.views.decorators.http import require_http_methods, require_POST

from memoryadmin.extraction import selectors as job_selectors
from memoryadmin.facts import selectors as fact_selectors
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import (
    FactBlocked,
    FactConflict,
    FactError,
    FactInvalid,
    FactNotFound,
    FactStateError,
)
from memoryadmin.facts.models import FactStatus, MemoryFact
from memoryadmin.facts.validation import normalize_key

from . import charts, selectors
from .forms import (
    BulkForm,
    EventFilterForm,
    ExpiryForm,
    FactAddForm,
    FactEditForm,
    ReasonForm,
    ReviewForm,
    SearchForm,
)
from .roles import EDITOR, VIEWER, has_role

# 50 rows: two screens of a dense table, quick to scan and to render; sortable, and paged below.
FACTS_PER_PAGE = 50
EVENTS_PER_PAGE = 50
TRAVELLERS_PER_PAGE = 50
REVEAL_SECONDS = 10 * 60
VALUE_FIELDS = ("value",)


def staff_required(role: str):
    """Log in first; then the role, or 403 (a logged-in account without a staff role is refused)."""

    def decorator(view):
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not has_role(request.user, role):
                raise PermissionDenied("This page is for support staff.")
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


# --- helpers ------------------------------------------------------------------------------------


def _subject_or_404(subject_id: str):
    subject = fact_selectors.subject_get(subject_id)
    if subject is None:
        raise Http404("No such traveller.")
    return subject


def _fact_or_404(subject_id: str, key: str) -> MemoryFact:
    fact = fact_selectors.subject_fact(subject_id, key)
    if fact is None:
        raise Http404("No such fact.")
    return fact


def _revealed(request: HttpRequest, subject_id: str) -> set[str]:
    """Keys of this traveller whose sensitive value this session revealed (for a few minutes)."""
    now = time.time()
    entries = request.session.get("revealed", {})
    prefix = f"{subject_id}\x1f"
    return {
        name[len(prefix) :]
        for name, until in entries.items()
        if name.startswith(prefix) and until > now
    }


def _remember_reveal(request: HttpRequest, subject_id: str, key: str) -> None:
    now = time.time()
    entries = {k: v for k, v in request.session.get("revealed", {}).items() if v > now}
    entries[f"{subject_id}\x1f{key}"] = now + REVEAL_SECONDS
    request.session["revealed"] = entries


def _next_url(request: HttpRequest, default: str) -> str:
    candidate = request.POST.get("next") or request.GET.get("next") or ""
    if candidate and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return default


def _traveller_url(subject_id: str, key: str | None = None) -> str:
    url = reverse("staff:traveller", args=[subject_id])
    return f"{url}#fact-{key}" if key else url


def _page(request: HttpRequest, items: Any, per_page: int):
    return Paginator(items, per_page).get_page(request.GET.get("page"))


def _query_without_page(request: HttpRequest) -> str:
    params = request.GET.copy()
    params.pop("page", None)
    return params.urlencode()


# --- pages --------------------------------------------------------------------------------------


@staff_required(VIEWER)
def overview(request: HttpRequest) -> HttpResponse:
    series = selectors.staff_activity_by_day()
    return render(
        request,
        "staff/overview.html",
        {
            "counts": selectors.staff_overview_counts(),
            "series": series,
            "chart": charts.activity_chart(series),
        },
    )


@staff_required(VIEWER)
def travellers(request: HttpRequest) -> HttpResponse:
    form = SearchForm(request.GET)
    query = form.cleaned_data["q"] if form.is_valid() else ""
    page = _page(request, selectors.staff_travellers(query), TRAVELLERS_PER_PAGE)
    status = 200 if form.is_valid() else 400
    return render(
        request,
        "staff/travellers.html",
        {"form": form, "query": query, "page": page, "qs": _query_without_page(request)},
        status=status,
    )


# Per-fact links of the traveller page: name -> (URL name, arguments after subject and key).
FACT_LINKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "history": ("staff:fact", ()),
    "reveal": ("staff:fact_reveal", ()),
    "edit": ("staff:fact_edit", ()),
    "expiry": ("staff:fact_expiry", ()),
    **{action: ("staff:fact_action", (action,))
       for action in ("approve", "reject", "expire", "flag", "unflag", "delete")},
}
_KEY_STANDIN = "fact-key-standin"  # left as it is by reverse(): only unreserved characters
_KEY_SAFE = RFC3986_SUBDELIMS + "/~:@"  # what reverse() leaves unquoted in a path


def _fact_link_parts(subject_id: str) -> dict[str, tuple[str, str]]:
    """Each per-fact URL reversed once, with a stand-in key, and split around it: a row's links
    are then string joins. Reversing ~8 URLs per row was the largest per-row cost of the page."""
    parts = {}
    for name, (url_name, extra) in FACT_LINKS.items():
        head, _, tail = reverse(url_name, args=[subject_id, _KEY_STANDIN, *extra]).rpartition(
            _KEY_STANDIN
        )
        parts[name] = (head, tail)
    return parts


def _fact_rows(
    facts: Any, *, subject_id: str, tier_one: set[str], revealed: set[str], back: str = ""
) -> list[dict[str, Any]]:
    """Everything a row shows, computed here once: the template only prints it (the filters,
    `{% url %}` tags and include it used per row cost about 1 ms a row)."""
    now = timezone.now()
    soon = now + timedelta(days=7)
    links = _fact_link_parts(subject_id)
    if back:  # every link but the history returns to this page and sort afterwards
        links = {
            name: (head, tail if name == "history" else f"{tail}{back}")
            for name, (head, tail) in links.items()
        }
    categories = dict(MemoryFact._meta.get_field("category").flatchoices)
    rows = []
    for fact in facts:
        quoted = quote(fact.key, safe=_KEY_SAFE)
        expires = fact.expires_at
        updated = fact.updated_at
        rows.append(
            {
                "fact": fact,
                "key": fact.key,
                "urls": {name: f"{head}{quoted}{tail}" for name, (head, tail) in links.items()},
                "masked": fact.sensitive and fact.key not in revealed,
                "tier_one": fact.key in tier_one,
                "expired": expires is not None and expires <= now,
                "expiring": expires is not None and now < expires <= soon,
                "pending": fact.status == FactStatus.PENDING_REVIEW,
                "category": categories.get(fact.category, fact.category),
                "updated_iso": timezone.localtime(updated).isoformat(),
                "updated_utc": updated.astimezone(UTC).strftime("%Y-%m-%d %H:%M"),
                "updated_ago": timesince(updated, now),
                "expires_iso": timezone.localtime(expires).isoformat() if expires else "",
                "expires_day": _day(expires) if expires else "",
            }
        )
    return rows


def _day(moment: datetime) -> str:
    """"3 Dec 2026" in the site's time zone, as the `date:"j M Y"` filter printed it."""
    local = timezone.localtime(moment)
    return f"{local.day} {local.strftime('%b')} {local.year}"


@staff_required(VIEWER)
def traveller(request: HttpRequest, subject_id: str) -> HttpResponse:
    subject = _subject_or_404(subject_id)
    sort = request.GET.get("sort", "")
    sort = sort if sort in selectors.STAFF_FACT_SORTS else ""
    facts = selectors.staff_subject_facts_qs(subject_id, sort=sort)
    page = _page(request, facts, FACTS_PER_PAGE)
    tier = {fact.key for fact in fact_selectors.tier_one(subject_id)}
    # On a later page or another sort, actions come back here rather than to the first page.
    here = request.get_full_path() if "page" in request.GET or sort else ""
    rows = _fact_rows(
        page.object_list,
        subject_id=subject_id,
        tier_one=tier,
        revealed=_revealed(request, subject_id),
        back=f"?{urlencode({'next': here})}" if here else "",
    )
    return render(
        request,
        "staff/traveller.html",
        {
            "subject": subject,
            "page": page,
            "rows": rows,
            "jobs": job_selectors.jobs_for_subject(subject_id),
            "sort": sort,
            "sort_links": [
                (name, label, name == sort)
                for name, label in (
                    ("key", "Key"),
                    ("category", "Category"),
                    ("status", "Status"),
                    ("updated", "Updated"),
                    ("expiry", "Expiry"),
                )
            ],
            "qs": _query_without_page(request),
            "here": here,
        },
    )


def _shown(value: Any) -> Any:
    """Snapshot values in words: yes/no for flags, a readable time for ISO timestamps."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return None
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] == "T":
        return value[:16].replace("T", " ")
    return value


def _event_rows(events: Any, *, revealed: set[str], sensitive_now: set[str]) -> list[dict]:
    """Each event with a field-by-field diff; values of sensitive facts stay masked."""
    rows = []
    for event in events:
        before, after = event.before or {}, event.after or {}
        masked = (
            before.get("sensitive") or after.get("sensitive") or event.key in sensitive_now
        ) and event.key not in revealed
        changes = []
        for name in dict.fromkeys([*before, *after]):
            old, new = before.get(name), after.get(name)
            if name == "version" or (before and after and old == new):
                continue
            hide = masked and name in VALUE_FIELDS
            changes.append({"field": name, "old": _shown(old), "new": _shown(new), "masked": hide})
        rows.append(
            {
                "event": event,
                "changes": changes,
                "erased": event.redacted_at is not None,
                "key_erased": event.key.startswith("#"),
                "has_before": bool(before),
            }
        )
    return rows


def _history(request: HttpRequest, subject_id: str, key: str | None) -> dict[str, Any]:
    form = EventFilterForm(request.GET)
    action = actor = ""
    if form.is_valid():
        action, actor = form.cleaned_data["action"], form.cleaned_data["actor"]
    events = selectors.staff_events(subject_id, key=key, action=action, actor_kind=actor)
    page = _page(request, events, EVENTS_PER_PAGE)
    revealed = _revealed(request, subject_id)
    sensitive_now = selectors.staff_sensitive_keys(subject_id)
    return {
        "filter_form": form,
        "page": page,
        "rows": _event_rows(page.object_list, revealed=revealed, sensitive_now=sensitive_now),
        "qs": _query_without_page(request),
    }


@staff_required(VIEWER)
def timeline(request: HttpRequest, subject_id: str) -> HttpResponse:
    subject = _subject_or_404(subject_id)
    context = {"subject": subject, **_history(request, subject_id, None)}
    return render(request, "staff/timeline.html", context)


@staff_required(VIEWER)
def fact_detail(request: HttpRequest, subject_id: str, key: str) -> HttpResponse:
    subject = _subject_or_404(subject_id)
    fact = _fact_or_404(subject_id, key)
    revealed = _revealed(request, subject_id)
    context = {
        "subject": subject,
        "fact": fact,
        "masked": fact.sensitive and fact.key not in revealed,
        **_history(request, subject_id, fact.key),
    }
    return render(request, "staff/fact.html", context)


@staff_required(VIEWER)
def review(request: HttpRequest) -> HttpResponse:
    page = _page(request, selectors.staff_review_queue(), EVENTS_PER_PAGE)
    revealed = set(request.session.get("revealed", {}))  # "subject\x1fkey" entries
    rows = [
        {
            "fact": fact,
            "masked": fact.sensitive and f"{fact.subject_id}\x1f{fact.key}" not in revealed,
            "form": ReviewForm(initial={"version": fact.version}, prefix=f"f{fact.pk}"),
        }
        for fact in page.object_list
    ]
    return render(request, "staff/review.html", {"page": page, "rows": rows})


# --- actions on one fact ------------------------------------------------------------------------

# action -> (title, button, service, message after, destructive)
SIMPLE_ACTIONS: dict[str, dict[str, Any]] = {
    "expire": {
        "title": "Expire",
        "button": "Expire now",
        "service": services.fact_expire,
        "done": "Expired {key}. The agent no longer sees it.",
        "destructive": True,
        "explain": "The agent stops seeing this fact now; the retention sweep deletes it later.",
    },
    "flag": {
        "title": "Flag as sensitive",
        "button": "Flag sensitive",
        "service": services.fact_flag_sensitive,
        "done": "Flagged {key} as sensitive. It is masked for viewers and never in tier one.",
        "destructive": False,
        "explain": "Sensitive facts are masked for viewers, never injected in every turn, and "
        "recalled only when the agent asks for them.",
    },
    "unflag": {
        "title": "Remove the sensitive flag",
        "button": "Remove flag",
        "service": services.fact_unflag_sensitive,
        "done": "{key} is no longer marked sensitive.",
        "destructive": False,
        "explain": "The value will be shown to viewers and may be injected in every turn.",
    },
    "approve": {
        "title": "Approve",
        "button": "Approve",
        "service": services.fact_approve,
        "done": "Approved {key}. The agent can use it now.",
        "destructive": False,
        "explain": "The agent may use this fact from now on.",
    },
    "reject": {
        "title": "Reject",
        "button": "Reject and erase",
        "service": services.fact_reject,
        "done": "Rejected {key}. It is erased.",
        "destructive": True,
        "explain": "The fact is erased; the history keeps only who rejected it and why.",
    },
    "delete": {
        "title": "Delete",
        "button": "Delete for good",
        "service": services.fact_delete,
        "done": "Deleted {key}. Its value is erased from the history too.",
        "destructive": True,
        "explain": "The fact is erased, and its old values are erased from the history. "
        "This cannot be undone.",
    },
}


def _render_action(
    request, fact, subject, spec, form, status=200, error: str = "", next_url: str = ""
):
    return render(
        request,
        "staff/fact_action.html",
        {
            "fact": fact,
            "subject": subject,
            "spec": spec,
            "form": form,
            "error": error,
            "masked": fact.sensitive and fact.key not in _revealed(request, fact.subject_id),
            "next": next_url or _next_url(request, ""),
        },
        status=status,
    )


def _apply(request: HttpRequest, spec: dict[str, Any], fact: MemoryFact, data: dict) -> None:
    """Run the action's service as the signed-in user, at the version the form was loaded at."""
    spec["service"](
        subject_id=fact.subject_id,
        key=fact.key,
        actor=Actor.staff(request.user),
        reason=data["reason"],
        expected_version=data["version"],
    )


@staff_required(EDITOR)
@require_http_methods(["GET", "POST"])
def fact_action(request: HttpRequest, subject_id: str, key: str, action: str) -> HttpResponse:
    spec = SIMPLE_ACTIONS.get(action)
    if spec is None:
        raise Http404("No such action.")
    subject = _subject_or_404(subject_id)
    fact = _fact_or_404(subject_id, key)
    if request.method == "GET":
        form = ReasonForm(initial={"version": fact.version})
        return _render_action(request, fact, subject, spec, form)
    form = ReasonForm(request.POST)
    if not form.is_valid():
        return _render_action(request, fact, subject, spec, form, status=400)
    try:
        _apply(request, spec, fact, form.cleaned_data)
    except FactConflict:
        fresh = fact_selectors.subject_fact(subject_id, key) or fact
        form = ReasonForm(initial={"version": fresh.version, "reason": form.cleaned_data["reason"]})
        error = "Someone changed this fact since you opened the page. Check it and confirm again."
        return _render_action(request, fresh, subject, spec, form, status=409, error=error)
    except FactStateError as exc:
        return _render_action(request, fact, subject, spec, form, status=400, error=exc.message)
    messages.success(request, spec["done"].format(key=fact.key))
    default = _traveller_url(subject_id, None if action in ("delete", "reject") else fact.key)
    return redirect(_next_url(request, default))


@staff_required(EDITOR)
@require_http_methods(["GET", "POST"])
def fact_reveal(request: HttpRequest, subject_id: str, key: str) -> HttpResponse:
    subject = _subject_or_404(subject_id)
    fact = _fact_or_404(subject_id, key)
    spec = {
        "title": "Reveal the sensitive value",
        "button": "Reveal",
        "destructive": False,
        "explain": "Your name, the time and your reason are recorded as an access event.",
    }
    if request.method == "GET":
        return _render_action(request, fact, subject, spec, ReasonForm())
    form = ReasonForm(request.POST)
    if not form.is_valid():
        return _render_action(request, fact, subject, spec, form, status=400)
    services.fact_reveal(
        subject_id=subject_id,
        key=fact.key,
        actor=Actor.staff(request.user),
        reason=form.cleaned_data["reason"],
    )
    _remember_reveal(request, subject_id, fact.key)
    messages.info(request, f"Revealed {fact.key} for 10 minutes. The access is in the history.")
    return redirect(_next_url(request, _traveller_url(subject_id, fact.key)))


@staff_required(EDITOR)
@require_http_methods(["GET", "POST"])
def fact_edit(request: HttpRequest, subject_id: str, key: str) -> HttpResponse:
    subject = _subject_or_404(subject_id)
    fact = _fact_or_404(subject_id, key)
    masked = fact.sensitive and fact.key not in _revealed(request, subject_id)
    context = {"subject": subject, "fact": fact, "masked": masked, "next": _next_url(request, "")}
    if request.method == "GET":
        initial = {"category": fact.category, "version": fact.version}
        if not masked:
            initial["value"] = fact.value
        context["form"] = FactEditForm(initial=initial)
        return render(request, "staff/fact_edit.html", context)
    form = FactEditForm(request.POST)
    context["form"] = form
    if not form.is_valid():
        return render(request, "staff/fact_edit.html", context, status=400)
    data = form.cleaned_data
    try:
        services.fact_edit(
            subject_id=subject_id,
            key=fact.key,
            expected_version=data["version"],
            actor=Actor.staff(request.user),
            value=data["value"],
            category=data["category"],
            reason=data["reason"],
        )
    except FactConflict:
        return _conflict(request, subject, fact, data)
    except (FactBlocked, FactInvalid) as exc:
        form.add_error("value", exc.message)
        return render(request, "staff/fact_edit.html", context, status=400)
    messages.success(request, f"Saved {fact.key}. The agent sees the new value from now on.")
    return redirect(_next_url(request, _traveller_url(subject_id, fact.key)))


def _conflict(request, subject, fact: MemoryFact, yours: dict[str, Any]) -> HttpResponse:
    """Both versions side by side; saving yours again needs a deliberate second submit."""
    form = FactEditForm(
        initial={
            "value": yours["value"],
            "category": yours["category"],
            "reason": yours["reason"],
            "version": fact.version,
        }
    )
    context = {
        "subject": subject,
        "fact": fact,
        "yours": yours,
        "form": form,
        "masked": fact.sensitive and fact.key not in _revealed(request, fact.subject_id),
    }
    return render(request, "staff/fact_conflict.html", context, status=409)


@staff_required(EDITOR)
@require_http_methods(["GET", "POST"])
def fact_expiry(request: HttpRequest, subject_id: str, key: str) -> HttpResponse:
    subject = _subject_or_404(subject_id)
    fact = _fact_or_404(subject_id, key)
    context = {"subject": subject, "fact": fact, "next": _next_url(request, "")}
    if request.method == "GET":
        initial = {"version": fact.version}
        if fact.expires_at:
            initial["expires_on"] = fact.expires_at.date()
        context["form"] = ExpiryForm(initial=initial)
        return render(request, "staff/fact_expiry.html", context)
    form = ExpiryForm(request.POST)
    context["form"] = form
    if not form.is_valid():
        return render(request, "staff/fact_expiry.html", context, status=400)
    day = form.cleaned_data["expires_on"]
    expires_at = (
        datetime.combine(day, dt_time.min, tzinfo=timezone.get_current_timezone()) if day else None
    )
    try:
        services.fact_set_expiry(
            subject_id=subject_id,
            key=fact.key,
            expires_at=expires_at,
            actor=Actor.staff(request.user),
            reason=form.cleaned_data["reason"],
            expected_version=form.cleaned_data["version"],
        )
    except FactConflict:
        form.add_error(None, "Someone changed this fact since you opened the page; check it.")
        context["fact"] = fact_selectors.subject_fact(subject_id, key) or fact
        return render(request, "staff/fact_expiry.html", context, status=409)
    if expires_at:
        messages.success(request, f"{fact.key} now expires on {day:%d %b %Y}.")
    else:
        messages.success(request, f"{fact.key} follows the retention rules again.")
    return redirect(_next_url(request, _traveller_url(subject_id, fact.key)))


@staff_required(EDITOR)
@require_http_methods(["GET", "POST"])
def fact_add(request: HttpRequest, subject_id: str) -> HttpResponse:
    subject = _subject_or_404(subject_id)
    form = FactAddForm(request.POST or None)
    context = {"subject": subject, "form": form}
    if request.method == "GET" or not form.is_valid():
        return render(
            request, "staff/fact_add.html", context, status=200 if request.method == "GET" else 400
        )
    data = form.cleaned_data
    try:
        key = normalize_key(data["key"])
        if not key:
            raise FactInvalid("Give a key.", fields={"key": "Give a key."})
        if fact_selectors.subject_fact(subject_id, key) is not None:
            form.add_error("key", "This traveller already has a fact with this key; edit it.")
            return render(request, "staff/fact_add.html", context, status=400)
        services.fact_upsert(
            subject_id=subject_id,
            facts=[services.FactDraft(key, data["value"], data["category"])],
            actor=Actor.staff(request.user),
            reason=data["reason"],
        )
    except (FactBlocked, FactInvalid) as exc:
        field = "key" if any("key" in name for name in exc.fields) else "value"
        form.add_error(field, exc.message)
        return render(request, "staff/fact_add.html", context, status=400)
    messages.success(request, f"Added {key}. The agent can use it from now on.")
    return redirect(_traveller_url(subject_id, key))


@staff_required(EDITOR)
@require_POST
def bulk(request: HttpRequest, subject_id: str) -> HttpResponse:
    subject = _subject_or_404(subject_id)
    wanted = request.POST.getlist("keys")[:FACTS_PER_PAGE]
    facts = selectors.staff_facts_by_keys(subject_id, wanted)
    form = BulkForm(request.POST, keys=[fact.key for fact in facts])
    back = _next_url(request, "")
    context = {"subject": subject, "form": form, "facts": facts, "next": back}
    if not form.is_valid():
        return render(request, "staff/bulk_confirm.html", context, status=400)
    data = form.cleaned_data
    label = dict(form.fields["action"].choices)[data["action"]]
    context["action_label"] = label
    if not data["confirmed"]:
        context["facts"] = [fact for fact in facts if fact.key in data["keys"]]
        return render(request, "staff/bulk_confirm.html", context)
    try:
        done = services.facts_bulk_apply(
            subject_id=subject_id,
            keys=data["keys"],
            action=data["action"],
            actor=Actor.staff(request.user),
            reason=data["reason"],
        )
    except (FactNotFound, FactError) as exc:
        messages.error(request, f"Nothing was changed: {exc.message}")
        return redirect(back or _traveller_url(subject_id))
    noun = "fact" if done == 1 else "facts"
    messages.success(request, f"{label}: {done} {noun}.")
    return redirect(back or _traveller_url(subject_id))


@staff_required(EDITOR)
@require_POST
def review_decide(request: HttpRequest, subject_id: str, key: str) -> HttpResponse:
    subject = _subject_or_404(subject_id)
    fact = _fact_or_404(subject_id, key)
    form = ReviewForm(request.POST, prefix=f"f{fact.pk}")
    queue = reverse("staff:review")
    if not form.is_valid():
        decision = form.data.get(f"f{fact.pk}-decision")
        spec = SIMPLE_ACTIONS["reject" if decision == "reject" else "approve"]
        retry = ReasonForm({"reason": "", "version": fact.version})
        retry.is_valid()  # shows "Give a reason" beside the field
        return _render_action(request, fact, subject, spec, retry, status=400, next_url=queue)
    decision = form.cleaned_data["decision"]
    spec = SIMPLE_ACTIONS[decision]
    try:
        _apply(request, spec, fact, form.cleaned_data)
    except FactConflict:
        messages.error(request, f"{fact.key} was changed meanwhile; check it and decide again.")
        return redirect(queue)
    except FactStateError as exc:
        messages.error(request, exc.message)
        return redirect(queue)
    messages.success(request, spec["done"].format(key=fact.key))
    return redirect(queue)
