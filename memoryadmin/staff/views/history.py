"""A traveller's timeline and one fact's page: the events, each with a field-by-field diff."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.dateparse import parse_datetime

from memoryadmin.access.choices import AccessKind
from memoryadmin.facts import selectors as fact_selectors
from memoryadmin.facts.keyhash import DIGEST_PREFIX, is_key_digest
from memoryadmin.facts.models import Category, EventAction, FactStatus
from memoryadmin.http_methods import read_only
from memoryadmin.usage import selectors as usage_selectors
from memoryadmin.usage.display import why_known

from .. import selectors
from ..forms import EventFilterForm
from ..roles import PRIVACY_ADMIN, VIEWER, has_role
from ..templatetags.actors import ACTOR_WORDS
from ..templatetags.staff_time import local_time
from .common import (
    EVENTS_PER_PAGE,
    RevealedKeys,
    page_of,
    query_without_page,
    record_access,
    revealed_keys,
    staff_required,
    subject_or_404,
)

VALUE_FIELDS = ("value", "evidence")  # the quote is masked with the value
CATEGORY_WORDS = {str(value): str(label) for value, label in Category.choices}
ERASING_ACTIONS = (
    EventAction.DELETED,
    EventAction.REJECTED,
    EventAction.EXPIRED,
    EventAction.FORGOTTEN,
)
# How a fact erased with everything else went, in words.
PATH_WORDS = {"forget_everything": "“Forget everything”", "clear": "Everything cleared by staff"}
# Snapshot fields in the words of the pages; None = bookkeeping staff need not read.
FIELD_LABELS: dict[str, str | None] = {
    "value": "Value",
    "evidence": "Traveller's words",
    "evidence_origin": None,
    "category": "Category",
    "status": "Status",
    "sensitive": "Sensitive",
    "expires_at": "Expires",
    "expiry_pinned": "Expiry set by staff",
    "origin": "Origin",
    "memory_paused": "Learning paused",
    "memory_use_paused": "Use of memory paused",
    "legal_hold": "Legal hold",
    "purge_generation": None,
    "version": None,
    "erased_fact": None,
    # a redacted version's marks: the row says it in words (`redaction`)
    "redacted_at": None,
    "redacted_version": None,
    "value_hash": None,
}


# Snapshot values that are internal names, in the pages' words.
VALUE_WORDS: dict[str, dict[str, str]] = {
    "status": {str(value): str(label) for value, label in FactStatus.choices},
    "category": CATEGORY_WORDS,
}


def _shown(value: Any, field: str = "") -> Any:
    """Snapshot values in words: yes/no for flags, the staff pages' one time format for ISO
    timestamps ("1 Dec 2026, 14:05:09 UTC"), labels for statuses and categories."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return None
    if field in VALUE_FIELDS:  # the traveller's words, as they are
        return value
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] == "T":
        moment = parse_datetime(value)
        return local_time(moment) if moment else value
    if isinstance(value, str) and field in VALUE_WORDS:
        return VALUE_WORDS[field].get(value, value)
    return value


def erased_summary(after: dict) -> dict[str, Any] | None:
    """What an erasure event kept about its fact (category, learned, changes), for the pages."""
    kept = after.get("erased_fact") if isinstance(after, dict) else None
    if not isinstance(kept, dict):
        return None
    learned = parse_datetime(str(kept.get("learned_at") or ""))
    return {
        "category": CATEGORY_WORDS.get(kept.get("category"), "unknown category"),
        "learned_at": learned,
        "changes": kept.get("changes") if isinstance(kept.get("changes"), int) else None,
        "path": PATH_WORDS.get(str(kept.get("path") or ""), ""),
        "receipt": str(kept.get("receipt") or ""),
    }


def _redactions_shown(subject_id: str, key: str | None, events: Any) -> dict | None:
    """On a fact's page that shows a redacted version, when, by whom and why it went: one query
    more, only then. The timeline lists the redaction itself."""
    if not key or not any(
        (event.after or {}).get("redacted_at") or (event.before or {}).get("redacted_at")
        for event in events
    ):
        return None
    return selectors.staff_version_redactions(subject_id, key)


def _version_written(event: Any, after: dict) -> int | None:
    """The version this event wrote (None for an event that wrote none: a reveal, a mark)."""
    version = after.get("version")
    if event.key.startswith("#") or not isinstance(version, int):
        return None
    return version


def _event_rows(
    events: Any,
    *,
    revealed: RevealedKeys,
    sensitive_now: set[str],
    redactions: dict[tuple[str, int], Any] | None = None,
    redactable_below: int = 0,
) -> list[dict]:
    """Each event with a field-by-field diff; values of sensitive facts stay masked. A version
    redacted since says so (when, by whom, why) instead of its value; with `redactable_below`
    (a privacy admin on a fact's page: its current version), each earlier version not yet
    redacted offers "Redact this version"."""
    rows = []
    redactions = redactions or {}
    for event in events:
        before, after = event.before or {}, event.after or {}
        written = _version_written(event, after)
        masked = (
            before.get("sensitive") or after.get("sensitive") or event.key in sensitive_now
        ) and event.key not in revealed
        changes = []
        for name in dict.fromkeys([*before, *after]):
            old, new = before.get(name), after.get(name)
            label = FIELD_LABELS.get(name, name.replace("_", " ").capitalize())
            if label is None or (before and after and old == new):
                continue
            hide = masked and name in VALUE_FIELDS
            shown_old, shown_new = _shown(old, name), _shown(new, name)
            old_gone = name in VALUE_FIELDS and bool(before.get("redacted_at"))
            new_gone = name in VALUE_FIELDS and bool(after.get("redacted_at"))
            if before and after and shown_old == shown_new and not (old_gone or new_gone):
                continue  # never "a → a": the same value in the words the page shows
            changes.append(
                {
                    "field": label,
                    "old": shown_old,
                    "new": shown_new,
                    "masked": hide,
                    "old_redacted": old_gone,
                    "new_redacted": new_gone,
                }
            )
        key_erased = event.key.startswith("#")
        rows.append(
            {
                "event": event,
                "changes": changes,
                "erased": event.redacted_at is not None,
                "key_erased": key_erased,
                "digest": event.key[1:] if key_erased else "",
                "summary": erased_summary(after),
                "has_before": bool(before),
                "actor_words": ACTOR_WORDS.get(event.actor_kind, ""),
                "version": written,
                "redaction": redactions.get((event.key, written)) if written else None,
                "redactable": bool(
                    written
                    and written < redactable_below
                    and event.action != EventAction.VERSION_REDACTED
                    and not after.get("redacted_at")
                ),
            }
        )
    return rows


def _history(
    request: HttpRequest, subject_id: str, key: str | None, *, redactable_below: int = 0
) -> dict[str, Any]:
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
        "rows": _event_rows(
            page.object_list,
            revealed=revealed,
            sensitive_now=sensitive_now,
            redactions=_redactions_shown(subject_id, key, page.object_list),
            redactable_below=redactable_below,
        ),
        "qs": query_without_page(request),
    }


@staff_required(VIEWER)
@read_only
def timeline(request: HttpRequest, subject_id: str) -> HttpResponse:
    subject = subject_or_404(subject_id)
    context = {"subject": subject, **_history(request, subject_id, None)}
    record_access(request, AccessKind.TIMELINE, [subject_id])
    return render(request, "staff/timeline.html", context)


def _deleted_fact(request: HttpRequest, subject: Any, key: str) -> HttpResponse:
    """The page at a deleted fact's address: what was kept about it, and its history (values
    erased). A key never known here is still a 404."""
    erasure = (
        fact_selectors.fact_history(subject.subject_id, key)
        .filter(action__in=ERASING_ACTIONS, redacted_at__isnull=True, key__startswith="#")
        .last()
    )
    if erasure is None:
        raise Http404("No such fact.")
    after = erasure.after or {}
    context = {
        "subject": subject,
        "erasure": erasure,
        "summary": erased_summary(after),
        "actor_words": ACTOR_WORDS.get(erasure.actor_kind, ""),
        **_history(request, subject.subject_id, key),
    }
    return render(request, "staff/fact_deleted.html", context)


@staff_required(VIEWER)
@read_only
def deleted_fact(request: HttpRequest, subject_id: str, digest: str) -> HttpResponse:
    """A deleted fact named by its keyed hash, as the timeline links to it."""
    subject = subject_or_404(subject_id)
    if not is_key_digest(DIGEST_PREFIX + digest):
        raise Http404("No such fact.")
    return _deleted_fact(request, subject, DIGEST_PREFIX + digest)


@staff_required(VIEWER)
@read_only
def fact_detail(request: HttpRequest, subject_id: str, key: str) -> HttpResponse:
    subject = subject_or_404(subject_id)
    fact = fact_selectors.subject_fact(subject_id, key)
    if fact is None:
        return _deleted_fact(request, subject, key)
    # The event that made the current version: a reveal is an access, a quality mark a
    # review, a restriction a stop of its use: none is a version.
    latest = (
        selectors.staff_events(subject_id, key=fact.key)
        .exclude(
            action__in=(
                EventAction.VALUE_REVEALED,
                EventAction.QUALITY_MARKED,
                EventAction.VERSION_REDACTED,
                EventAction.RESTRICTED,
                EventAction.UNRESTRICTED,
            )
        )
        .first()
    )
    revealed = revealed_keys(request, subject_id)
    record_access(request, AccessKind.FACT_HISTORY, [subject_id])
    context = {
        "subject": subject,
        "fact": fact,
        "masked": fact.sensitive and fact.key not in revealed,
        "version_at": latest.created_at if latest else fact.changed_at,
        "version_action": latest.get_action_display() if latest else "",
        "why": why_known(fact),
        "use": usage_selectors.fact_use_summary(fact),
        "uses": usage_selectors.fact_recent_uses(fact),
        **_history(
            request,
            subject_id,
            fact.key,
            # "Redact this version" on each earlier version: privacy admins only
            redactable_below=fact.version if has_role(request.user, PRIVACY_ADMIN) else 0,
        ),
    }
    return render(request, "staff/fact.html", context)
