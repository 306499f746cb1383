"""The traveller list and one traveller's facts (the workbench)."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Any
from urllib.parse import quote, urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import RFC3986_SUBDELIMS

from memoryadmin.access.choices import AccessKind
from memoryadmin.extraction import selectors as job_selectors
from memoryadmin.facts import selectors as fact_selectors
from memoryadmin.facts.models import Category, FactStatus, MemoryFact
from memoryadmin.http_methods import read_only
from memoryadmin.usage import selectors as usage_selectors

from .. import selectors
from ..forms import SearchForm
from ..roles import EDITOR, VIEWER
from ..templatetags.staff_time import day, exact_time, relative_time
from .common import (
    FACTS_PER_PAGE,
    TRAVELLERS_PER_PAGE,
    RevealedKeys,
    page_of,
    query_without_page,
    record_access,
    revealed_keys,
    staff_required,
    subject_or_404,
)


@staff_required(VIEWER)
@read_only
def travellers(request: HttpRequest) -> HttpResponse:
    form = SearchForm(request.GET)
    query = form.cleaned_data["q"] if form.is_valid() else ""
    exact = selectors.staff_exact_traveller(query) if query and "page" not in request.GET else None
    if exact is not None:  # an exact id or receipt number: straight to that traveller
        return redirect("staff:traveller", subject_id=exact)
    show = request.GET.get("show", "")
    show = show if show in selectors.TRAVELLER_FILTERS else ""
    page = page_of(request, selectors.staff_travellers(query, show=show), TRAVELLERS_PER_PAGE)
    status = 200 if form.is_valid() else 400
    if query:
        record_access(request, AccessKind.SEARCH, [subject.subject_id for subject in page])
    return render(
        request,
        "staff/travellers.html",
        {
            "form": form,
            "query": query,
            "page": page,
            "qs": query_without_page(request),
            "show": show,
            "show_label": selectors.TRAVELLER_FILTERS.get(show, ""),
        },
        status=status,
    )


# Per-fact links of the traveller page: name -> (URL name, arguments after subject and key).
FACT_LINKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "history": ("staff:fact", ()),
    "reveal": ("staff:fact_reveal", ()),
    "edit": ("staff:fact_edit", ()),
    "expiry": ("staff:fact_expiry", ()),
    "restrict": ("staff:fact_restrict", ()),
    "confirm": ("staff:fact_confirm", ()),
    **{
        action: ("staff:fact_action", (action,))
        for action in ("approve", "reject", "expire", "flag", "unflag", "delete")
    },
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
    facts: Any, *, subject_id: str, tier_one: set[str], revealed: RevealedKeys, back: str = ""
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
        updated = fact.changed_at  # any change (flag, expire too), not the retention basis
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
                "updated_exact": exact_time(updated),
                "updated_ago": relative_time(updated),
                "expires_iso": timezone.localtime(expires).isoformat() if expires else "",
                "expires_day": day(expires) if expires else "",
            }
        )
    return rows


@staff_required(VIEWER)
@read_only
def traveller(request: HttpRequest, subject_id: str) -> HttpResponse:
    subject = subject_or_404(subject_id)
    sort = request.GET.get("sort", "")
    sort = sort if sort in selectors.STAFF_FACT_SORTS else ""
    facts = selectors.staff_subject_facts_qs(subject_id, sort=sort)
    unused = request.GET.get("unused") == "1"
    if unused:  # data minimisation: facts the agent had in no turn for 90 days
        facts = usage_selectors.unused_only(facts)
    page = page_of(request, facts, FACTS_PER_PAGE)
    tier = {fact.key for fact in fact_selectors.tier_one(subject_id)}
    record_access(request, AccessKind.TRAVELLER, [subject_id])
    # On a later page or another sort, actions come back here rather than to the first page.
    here = request.get_full_path() if "page" in request.GET or sort or unused else ""
    rows = _fact_rows(
        page.object_list,
        subject_id=subject_id,
        tier_one=tier,
        revealed=revealed_keys(request, subject_id),
        back=f"?{urlencode({'next': here})}" if here else "",
    )
    uses = usage_selectors.use_summaries(row["fact"] for row in rows)
    for row in rows:
        last = uses[row["fact"].pk].last_used_at if row["fact"].pk in uses else None
        row["last_used"] = day(last) if last else ""
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
            "qs": query_without_page(request),
            "here": here,
            "unused": unused,
            "unused_days": usage_selectors.UNUSED_DAYS,
        },
    )


def _moment(raw: str) -> datetime | None:
    """A date and time as the form's field sends it (YYYY-MM-DDTHH:MM: the end of that minute,
    or a date alone: the end of that day), in the airline's one zone (`TIME_ZONE`, named on
    the page); None when it is not one."""
    raw = raw.strip()
    try:
        if len(raw) == 10:
            moment = datetime.combine(date.fromisoformat(raw), time(23, 59, 59))
        else:
            moment = datetime.fromisoformat(raw)
            if len(raw) == 16:  # to the minute: all of it
                moment = moment.replace(second=59, microsecond=999_999)
    except ValueError:
        return None
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment


@staff_required(EDITOR)
@read_only
def traveller_as_of(request: HttpRequest, subject_id: str) -> HttpResponse:
    """The traveller's memory as it stood at a moment, rebuilt from the history:
    which facts existed, with which values, which were in tier one; erased ones as erased.
    On the access record like any look. Queries: the traveller, the history, the settings."""
    subject = subject_or_404(subject_id)
    raw = request.GET.get("at", "")
    at = _moment(raw) if raw else None
    error = "Give a date and time, like 2026-11-03 14:30." if raw and at is None else ""
    if at is not None and at - timedelta(days=1) > timezone.now():
        error, at = "Give a moment in the past, or today.", None
    facts, use_paused = [], False
    if at is not None:
        cap = selectors.tier_one_cap_at(at, today=fact_selectors.memory_settings().tier_one_cap)
        use_paused = selectors.memory_use_paused_at(subject_id, at, today=subject.memory_use_paused)
        facts = selectors.staff_memory_as_of(subject_id, at, cap=cap, use_paused=use_paused)
        record_access(request, AccessKind.AS_OF, [subject_id])
    revealed = revealed_keys(request, subject_id)
    categories = dict(Category.choices)
    # A page at a time, as the traveller page: the history is read whole, the rows rendered 50.
    page = page_of(request, facts, FACTS_PER_PAGE)
    rows = [
        {
            "fact": fact,
            "category": categories.get(fact.category, fact.category),
            "masked": fact.sensitive and fact.key not in revealed,
        }
        for fact in page
    ]
    return render(
        request,
        "staff/as_of.html",
        {
            "subject": subject,
            "at": at,
            "at_value": timezone.localtime(at).strftime("%Y-%m-%dT%H:%M") if at else raw[:16],
            "error": error,
            "rows": rows,
            "page": page,
            "qs": urlencode({"at": raw[:16]}) if at else "",
            "held": len(facts),
            "in_tier_one": sum(1 for fact in facts if fact.tier_one),
            "erased_since": sum(1 for fact in facts if fact.erased),
            "use_paused": use_paused,
        },
        status=400 if error else 200,
    )
