"""A traveller's timeline and one fact's page: the events, each with a field-by-field diff."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .. import selectors
from ..forms import EventFilterForm
from ..roles import VIEWER
from .common import (
    EVENTS_PER_PAGE,
    RevealedKeys,
    fact_or_404,
    page_of,
    query_without_page,
    revealed_keys,
    staff_required,
    subject_or_404,
)

VALUE_FIELDS = ("value",)


def _shown(value: Any) -> Any:
    """Snapshot values in words: yes/no for flags, a readable time for ISO timestamps."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return None
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] == "T":
        return value[:16].replace("T", " ")
    return value


def _event_rows(events: Any, *, revealed: RevealedKeys, sensitive_now: set[str]) -> list[dict]:
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
    page = page_of(request, events, EVENTS_PER_PAGE)
    revealed = revealed_keys(request, subject_id)
    sensitive_now = selectors.staff_sensitive_keys(subject_id)
    return {
        "filter_form": form,
        "page": page,
        "rows": _event_rows(page.object_list, revealed=revealed, sensitive_now=sensitive_now),
        "qs": query_without_page(request),
    }


@staff_required(VIEWER)
def timeline(request: HttpRequest, subject_id: str) -> HttpResponse:
    subject = subject_or_404(subject_id)
    context = {"subject": subject, **_history(request, subject_id, None)}
    return render(request, "staff/timeline.html", context)


@staff_required(VIEWER)
def fact_detail(request: HttpRequest, subject_id: str, key: str) -> HttpResponse:
    subject = subject_or_404(subject_id)
    fact = fact_or_404(subject_id, key)
    revealed = revealed_keys(request, subject_id)
    context = {
        "subject": subject,
        "fact": fact,
        "masked": fact.sensitive and fact.key not in revealed,
        **_history(request, subject_id, fact.key),
    }
    return render(request, "staff/fact.html", context)
