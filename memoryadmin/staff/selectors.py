"""Reads for the support dashboard. Each is a fixed number of queries whatever the number of facts
or events; lists come back as querysets so the views can paginate them in SQL.

Reads that the write side, the agent or the portal share stay in `facts.selectors`; the
extraction jobs are read through `extraction.selectors`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from memoryadmin.extraction.selectors import jobs_failed_since, subjects_with_jobs_failed_since
from memoryadmin.facts import topics
from memoryadmin.facts.keyhash import history_hashes
from memoryadmin.facts.models import (
    Category,
    EventAction,
    FactEvent,
    FactStatus,
    MemoryFact,
    PolicyAction,
    PolicyEvent,
    Subject,
)
from memoryadmin.facts.sql import SQL_MEMORY_AS_OF

CHART_DAYS = 30
CREATED_ACTIONS = ("created",)
CHANGED_ACTIONS = (
    "updated",
    "expired",
    "expiry_changed",
    "flagged_sensitive",
    "unflagged_sensitive",
    "approved",
)
# Facts deleted: "forget everything" counts each fact it erased (its `forgotten` events), not
# the one subject_cleared event, which may have erased none or thousands.
DELETED_ACTIONS = ("deleted", "rejected", "forgotten")


def staff_overview_counts() -> dict[str, object]:
    """The numbers on the overview page: three aggregate queries."""
    now = timezone.now()
    facts = MemoryFact.objects.aggregate(
        total=Count("id"),
        preference=Count("id", filter=Q(category=Category.PREFERENCE)),
        constraint=Count("id", filter=Q(category=Category.CONSTRAINT)),
        context=Count("id", filter=Q(category=Category.CONTEXT)),
        pending=Count("id", filter=Q(status=FactStatus.PENDING_REVIEW)),
        sensitive=Count("id", filter=Q(sensitive=True)),
        expiring=Count("id", filter=Q(expires_at__gt=now, expires_at__lte=now + timedelta(days=7))),
    )
    events = FactEvent.objects.filter(
        actor_kind="customer", created_at__gte=now - timedelta(days=30)
    ).aggregate(
        deleted=Count("id", filter=Q(action="deleted")),
        cleared=Count("id", filter=Q(action="subject_cleared")),
    )
    return {
        "travellers": Subject.objects.count(),
        "facts": facts,
        "deleted_by_travellers": events["deleted"],
        "cleared_by_travellers": events["cleared"],
        "failed_jobs": jobs_failed_since(now - timedelta(hours=24)),
    }


def staff_activity_by_day(*, days: int = CHART_DAYS) -> list[dict[str, object]]:
    """Facts learned, changed and deleted per day (the one zone's days) over the last `days`,
    zeros included."""
    today = timezone.localdate()
    first = today - timedelta(days=days - 1)
    rows = (
        FactEvent.objects.filter(created_at__date__gte=first)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(
            learned=Count("id", filter=Q(action__in=CREATED_ACTIONS)),
            changed=Count("id", filter=Q(action__in=CHANGED_ACTIONS)),
            deleted=Count("id", filter=Q(action__in=DELETED_ACTIONS)),
        )
        .order_by("day")
    )
    by_day = {row["day"]: row for row in rows}
    series = []
    for offset in range(days):
        day = first + timedelta(days=offset)
        row = by_day.get(day, {})
        series.append(
            {
                "day": day,
                "learned": row.get("learned", 0),
                "changed": row.get("changed", 0),
                "deleted": row.get("deleted", 0),
            }
        )
    return series


def staff_exact_traveller(query: str) -> str | None:
    """The one traveller a search names exactly, by id or by a "forget everything" receipt
    number, so the search can open them at once. One query."""
    query = query.strip()
    if not query or len(query) > 200:
        return None
    receipts = FactEvent.objects.filter(
        action=EventAction.SUBJECT_CLEARED, receipt=query.upper()
    ).values("subject_id")
    found = list(
        Subject.objects.filter(Q(subject_id=query) | Q(subject_id__in=receipts)).values_list(
            "subject_id", flat=True
        )[:2]
    )
    return found[0] if len(found) == 1 else None


# The overview's tiles open the traveller list filtered to what they count: name -> heading.
TRAVELLER_FILTERS = {
    "pending": "waiting for review",
    "sensitive": "with sensitive facts",
    "expiring": "with facts expiring within 7 days",
    "deleted": "who deleted facts in the last 30 days",
    "failed": "whose extraction jobs failed in 24 hours",
}


def _filtered(subjects: QuerySet[Subject], show: str) -> QuerySet[Subject]:
    now = timezone.now()
    facts = MemoryFact.objects.filter(subject_id=OuterRef("subject_id"))
    if show == "pending":
        return subjects.filter(Exists(facts.filter(status=FactStatus.PENDING_REVIEW)))
    if show == "sensitive":
        return subjects.filter(Exists(facts.filter(sensitive=True)))
    if show == "expiring":
        soon = facts.filter(expires_at__gt=now, expires_at__lte=now + timedelta(days=7))
        return subjects.filter(Exists(soon))
    if show == "deleted":
        deleted = FactEvent.objects.filter(
            subject_id=OuterRef("subject_id"),
            actor_kind="customer",
            action__in=("deleted", "subject_cleared"),
            created_at__gte=now - timedelta(days=30),
        )
        return subjects.filter(Exists(deleted))
    if show == "failed":
        return subjects.filter(
            subject_id__in=subjects_with_jobs_failed_since(now - timedelta(hours=24))
        )
    return subjects


def staff_travellers(query: str = "", *, show: str = "") -> QuerySet[Subject]:
    """Travellers for the staff list, newest change first, with their fact counts.

    A query matches a traveller id prefix, a "forget everything" receipt number, or travellers
    holding a fact that is not sensitive whose value or topic contains every word (ILIKE, which
    the partial pg_trgm index on the values of facts that are not sensitive serves). A
    sensitive fact is never matched by its words or its topic: its value is shown only to
    whoever reveals it, and a search that found its holder would tell it to anyone.
    """
    subjects = Subject.objects.annotate(
        fact_count=Count("facts"),
        pending_count=Count("facts", filter=Q(facts__status=FactStatus.PENDING_REVIEW)),
        sensitive_count=Count("facts", filter=Q(facts__sensitive=True)),
        last_change=Max("facts__changed_at"),  # any change, as the traveller page shows
    )
    query = query.strip()
    if query:
        words = query.split()[:8]
        matching = MemoryFact.objects.filter(subject_id=OuterRef("subject_id"), sensitive=False)
        for word in words:
            matching = matching.filter(
                Q(value__icontains=word)
                | Q(key__icontains=word)
                | Q(key__in=topics.keys_for_word(word))
            )
        receipts = FactEvent.objects.filter(
            action=EventAction.SUBJECT_CLEARED, receipt=query.upper()
        ).values("subject_id")
        subjects = subjects.filter(
            Q(subject_id__startswith=query) | Exists(matching) | Q(subject_id__in=receipts)
        )
    return _filtered(subjects, show).order_by("-updated_at", "subject_id")


STAFF_FACT_SORTS = {
    "": ("created_at", "id"),  # the order the agent sees them in
    "key": ("key",),
    "category": ("category", "created_at", "id"),
    "status": ("status", "created_at", "id"),
    "updated": ("-changed_at", "id"),  # what the "Updated" column shows
    "expiry": ("expires_at", "id"),
}


def staff_subject_facts_qs(subject_id: str, *, sort: str = "") -> QuerySet[MemoryFact]:
    """Every fact of one traveller for the workbench; by default in the order first written."""
    order = STAFF_FACT_SORTS.get(sort, STAFF_FACT_SORTS[""])
    return MemoryFact.objects.filter(subject_id=subject_id).order_by(*order)


def staff_sensitive_keys(subject_id: str) -> set[str]:
    """Keys whose values the history must mask too."""
    return set(
        MemoryFact.objects.filter(subject_id=subject_id, sensitive=True).values_list(
            "key", flat=True
        )
    )


def staff_facts_by_keys(subject_id: str, keys: list[str]) -> list[MemoryFact]:
    return list(
        MemoryFact.objects.filter(subject_id=subject_id, key__in=keys).order_by("created_at", "id")
    )


def travellers_with_memory_count() -> int:
    """How many travellers have at least one fact: who turning memory off affects."""
    return MemoryFact.objects.values("subject_id").distinct().count()


def staff_review_queue() -> QuerySet[MemoryFact]:
    """Facts waiting for review across travellers, oldest first."""
    return MemoryFact.objects.filter(status=FactStatus.PENDING_REVIEW).order_by("created_at", "id")


def staff_events(
    subject_id: str, *, key: str | None = None, action: str = "", actor_kind: str = ""
) -> QuerySet[FactEvent]:
    """History for the fact page (one key) or the traveller timeline (all keys), newest first."""
    events = FactEvent.objects.filter(subject_id=subject_id).select_related("actor_user")
    if key is not None:  # through the keyed hash (indexed), as fact_history
        events = events.filter(key_hash__in=history_hashes(subject_id, key))
    if action:
        events = events.filter(action=action)
    if actor_kind:
        events = events.filter(actor_kind=actor_kind)
    return events.order_by("-created_at", "-id")


def staff_version_redactions(subject_id: str, key: str) -> dict[tuple[str, int], FactEvent]:
    """(key, version) -> the event that redacted that version of one fact: one query, so its
    history says when, by whom and why next to each redacted version, whichever page of the
    history each is on."""
    events = FactEvent.objects.filter(
        subject_id=subject_id,
        key_hash__in=history_hashes(subject_id, key),
        action=EventAction.VERSION_REDACTED,
    ).select_related("actor_user")
    return {
        (event.key, (event.after or {}).get("redacted_version")): event
        for event in events.order_by("created_at", "id")
    }


# --- memory as of a date ------------------------------------------------------------------------


@dataclass
class AsOfFact:
    """One fact as it stood at a moment, rebuilt from the history. An erased one keeps no key
    or value (its snapshots are blank): only its category, when it was learned, and
    `erased_on`."""

    key_hash: str
    key: str = ""
    value: str = ""
    category: str = ""
    status: str = ""
    sensitive: bool = False
    expires_at: str | None = None
    learned_at: datetime | None = None
    changed_at: datetime | None = None
    version: int | None = None
    erased_on: datetime | None = None
    tier_one: bool = False
    # that version alone was redacted since: the page says "redacted", never the value
    redacted_on: datetime | None = None
    event_id: int = 0  # the snapshot's event: the order within a batch

    @property
    def erased(self) -> bool:
        """Erased since the moment: its value, status and flags went with it, so whether the
        agent had it in tier one then is not known (never shown as "no")."""
        return not self.key


def tier_one_cap_at(at: datetime, *, today: int) -> int:
    """The tier-one cap the agent's reads used at `at`: the value before the first change of
    it after `at` (the policy history's settings changes), else today's (`today`)."""
    later = (
        PolicyEvent.objects.filter(
            action=PolicyAction.SETTINGS_CHANGED,
            created_at__gt=at,
            before__has_key="tier_one_cap",
        )
        .order_by("created_at", "id")
        .values_list("before", flat=True)
        .first()
    )
    return int(later["tier_one_cap"]) if later else today


def memory_use_paused_at(subject_id: str, at: datetime, *, today: bool) -> bool:
    """Whether the traveller had the agent's use of their memory paused at `at` (the agent's
    read then returned nothing): the last switch change at or before it, else the state before
    the first one after it, else today's (`today`). One query over the few switch events."""
    changes = FactEvent.objects.filter(
        subject_id=subject_id, action=EventAction.PREFERENCES_CHANGED
    ).order_by("created_at", "id")
    state = None
    for created_at, before, after in changes.values_list("created_at", "before", "after"):
        if created_at > at:
            return bool((before or {}).get("memory_use_paused", False)) if state is None else state
        state = bool((after or {}).get("memory_use_paused", False))
    return today if state is None else state


def staff_memory_as_of(
    subject_id: str, at: datetime, *, cap: int, use_paused: bool = False
) -> list[AsOfFact]:
    """The traveller's memory as it stood at `at`, from the history in one statement
    (`SQL_MEMORY_AS_OF`: the server keeps each fact's last snapshot at or before `at`, so a page
    costs one row per fact, not one per event): a fact erased later shows as erased (its
    snapshots are blank), one erased by then is gone. Tier one as the agent's read ranked it then
    (`SQL_TIER_ONE`: active, not sensitive, not expired at `at`; rules first, then the newest),
    with the cap in force then (`tier_one_cap_at`), and none while the traveller had paused its
    use (`use_paused`, from `memory_use_paused_at`). A fact erased since takes no part: whether
    it was in tier one went with it."""
    with connection.cursor() as cursor:
        cursor.execute(SQL_MEMORY_AS_OF, {"subject": subject_id, "at": at})
        rows = cursor.fetchall()
    facts = []
    for (
        key_hash,
        key,
        redacted,
        created_at,
        event_id,
        learned_at,
        value,
        category,
        status,
        sensitive,
        expires_at,
        version,
        erased_on,
        erased_category,
        redacted_on,
    ) in rows:
        if redacted:  # its snapshots were blanked by the fact's erasure
            fact = AsOfFact(
                key_hash=key_hash,
                learned_at=learned_at,
                changed_at=created_at if created_at != learned_at else None,
                event_id=event_id,
            )
        else:
            fact = AsOfFact(
                key_hash=key_hash,
                key="" if key.startswith("#") else key,
                value=value or "",
                category=category or "",
                status=status or "",
                sensitive=sensitive,
                expires_at=expires_at,
                version=version,
                learned_at=learned_at,
                changed_at=created_at,
                redacted_on=redacted_on,
                event_id=event_id,
            )
        if erased_on is not None:
            fact.erased_on = erased_on
            if not fact.key:  # erased: nothing of it but the summary
                fact.category = fact.category or erased_category or ""
        facts.append(fact)
    if not use_paused:
        _rank_tier_one([f for f in facts if f.key and _servable(f, at)], cap)
    return sorted(facts, key=lambda f: (f.category, f.key or "~", f.learned_at or at))


def _servable(fact: AsOfFact, at: datetime) -> bool:
    if fact.status != FactStatus.ACTIVE or fact.sensitive:
        return False
    if fact.expires_at:
        expires = datetime.fromisoformat(fact.expires_at)
        return expires > at
    return True


def _rank_tier_one(facts: list[AsOfFact], cap: int) -> None:
    rules = sorted(
        (f for f in facts if f.category == Category.CONSTRAINT),
        key=lambda f: f.learned_at or datetime.min.replace(tzinfo=UTC),
    )
    rest = sorted(
        (f for f in facts if f.category != Category.CONSTRAINT),
        key=lambda f: (f.changed_at or datetime.min.replace(tzinfo=UTC), f.event_id),
        reverse=True,
    )
    for fact in (rules + rest)[: max(cap, len(rules))]:
        fact.tier_one = True
