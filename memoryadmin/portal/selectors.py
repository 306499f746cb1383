"""Reads for the traveller portal. The traveller's list is paginated, so each read is a fixed
number of queries whatever the number of facts.

Reads that the write side, the agent or the staff pages share (`subject_fact`,
`clear_receipt_get`, `memory_settings`, ...) stay in `facts.selectors`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from django.db.models import Case, Count, IntegerField, Q, Value, When

from memoryadmin.facts.keyhash import history_hashes
from memoryadmin.facts.models import Category, EventAction, FactEvent, MemoryFact, Subject
from memoryadmin.facts.selectors import ClearReceipt, receipt_from_event

PORTAL_GROUP_ORDER = (Category.PREFERENCE, Category.CONSTRAINT, Category.CONTEXT)


@dataclass(frozen=True)
class PortalOverview:
    """The traveller's switches and how many facts they hold, per group, for the portal page."""

    subject: Subject | None
    total: int
    by_category: dict[str, int]


def portal_overview(subject_id: str) -> PortalOverview:
    """The subject row with its fact counts per category: one query whatever the number of facts
    (the counts drive the sentence at the top, the pager and where each group starts)."""
    per_category = {
        f"n_{category}": Count("facts", filter=Q(facts__category=category))
        for category in PORTAL_GROUP_ORDER
    }
    subject = (
        Subject.objects.filter(subject_id=subject_id)
        .annotate(n_total=Count("facts"), **per_category)
        .first()
    )
    if subject is None:
        return PortalOverview(None, 0, dict.fromkeys(PORTAL_GROUP_ORDER, 0))
    counts = {category: getattr(subject, f"n_{category}") for category in PORTAL_GROUP_ORDER}
    return PortalOverview(subject, subject.n_total, counts)


class FactSource(NamedTuple):
    """The event that last set a fact's words: who wrote them, and when."""

    actor_kind: str
    action: str
    created_at: datetime


def portal_facts_page(
    subject_id: str, *, offset: int, limit: int
) -> list[tuple[MemoryFact, FactSource | None]]:
    """One page of a traveller's facts in the portal's order (preferences, travel rules, context;
    oldest first within each), each with the event that last set its value (created or updated;
    None when audit retention trimmed it). Two queries: the page's rows, then the created and
    updated events of those rows only, found through the keyed hash every event stores
    (fact_event_subject_hash), not the traveller's whole history."""
    group_order = Case(
        *(When(category=c, then=Value(i)) for i, c in enumerate(PORTAL_GROUP_ORDER)),
        default=Value(len(PORTAL_GROUP_ORDER)),
        output_field=IntegerField(),
    )
    facts = list(
        MemoryFact.objects.filter(subject_id=subject_id)
        .annotate(group_order=group_order)
        .order_by("group_order", "created_at", "id")[offset : offset + limit]
    )
    if not facts:
        return []
    by_hash = {  # hashes under older secrets too (SECRET_KEY_FALLBACKS), as fact_history
        key_hash: fact.key for fact in facts for key_hash in history_hashes(subject_id, fact.key)
    }
    latest: dict[str, FactSource] = {}
    events = (
        FactEvent.objects.filter(
            subject_id=subject_id,
            key_hash__in=list(by_hash),
            action__in=[EventAction.CREATED, EventAction.UPDATED],
        )
        .order_by("created_at", "id")
        .values_list("key_hash", "actor_kind", "action", "created_at")
    )
    for key_hash, actor_kind, action, created_at in events:  # the newest of each fact wins
        latest[by_hash[key_hash]] = FactSource(actor_kind, action, created_at)
    return [(fact, latest.get(fact.key)) for fact in facts]


def traveller_receipts(subject_id: str, *, limit: int = 50) -> list[ClearReceipt]:
    """The traveller's "forget everything" receipts, newest first: one query."""
    events = FactEvent.objects.filter(
        subject_id=subject_id, action=EventAction.SUBJECT_CLEARED
    ).order_by("-created_at", "-id")[:limit]
    return [receipt_from_event(event) for event in events if event.receipt]


def subject_events(subject_id: str) -> list[FactEvent]:
    """A traveller's whole history, oldest first (their data export)."""
    return list(FactEvent.objects.filter(subject_id=subject_id).order_by("created_at", "id"))
