"""Every read the agent, the API and the pages need. Each one is a fixed number of queries.

The agent's reads (`facts_for_agent`, `fact_for_agent`, `tier_one`, `facts_search`,
`purge_generation`) sit on every turn of the agent, so each is one fixed SQL statement that
returns only the wire columns (no ORM query building, no model instances): building the ORM
query for the visibility filter used to cost more than running it. The SQL text is shared with
the native async path of `DjangoMemoryStore` (`facts/store.py`), so both paths give the same
rows by construction.

Memory settings and retention rules are read on every turn and every write but change a few
times a year: they are cached per process (`memory_config`), dropped at once in this process by
`memory_config_invalidate()` (called by every service that changes them, and on save), and
re-read by other processes within `MEMORY_CONFIG_CACHE_SECONDS`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from .db import hot_cursor, is_postgresql
from .keyhash import history_hashes
from .models import (
    Category,
    EventAction,
    FactEvent,
    FactStatus,
    MemoryFact,
    MemorySettings,
    RetentionRule,
    Subject,
)

# --- cached configuration ------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryConfig:
    """The settings row and the enabled retention rules, as one immutable snapshot."""

    settings: MemorySettings
    rules: tuple[RetentionRule, ...]
    loaded_at: float


_config: MemoryConfig | None = None
_config_lock = threading.Lock()


def _config_ttl() -> float:
    return float(getattr(settings, "MEMORY_CONFIG_CACHE_SECONDS", 5.0))


def _load_config() -> MemoryConfig:
    # A read never creates the row (a data migration does); after a test flush it may be gone,
    # and then the defaults apply.
    row = MemorySettings.objects.filter(pk=1).first() or MemorySettings(pk=1)
    rules = tuple(RetentionRule.objects.filter(enabled=True).order_by("id"))
    return MemoryConfig(settings=row, rules=rules, loaded_at=time.monotonic())


def memory_config() -> MemoryConfig:
    """The cached settings and rules; two queries at most once per TTL per process."""
    global _config
    current = memory_config_if_fresh()
    if current is not None:
        return current
    with _config_lock:
        if _config is None or time.monotonic() - _config.loaded_at >= _config_ttl():
            _config = _load_config()
        return _config


def memory_config_if_fresh() -> MemoryConfig | None:
    """The cached config if it is still fresh, without touching the database (async callers)."""
    current = _config
    if current is not None and time.monotonic() - current.loaded_at < _config_ttl():
        return current
    return None


def memory_config_invalidate() -> None:
    """Forget the cached settings and retention rules in this process, now and again when the
    current transaction commits (so a reader cannot cache the pre-commit state meanwhile).
    Every service that changes MemorySettings or a RetentionRule calls this."""
    global _config
    _config = None

    def _drop() -> None:
        global _config
        _config = None

    if connection.in_atomic_block:
        transaction.on_commit(_drop)


def memory_settings() -> MemorySettings:
    """The singleton (the defaults when the row is missing). Treat it as read-only: changes go
    through a service, which invalidates the cache."""
    return memory_config().settings


def retention_rules() -> tuple[RetentionRule, ...]:
    """The enabled retention rules, cached like the settings."""
    return memory_config().rules


# --- the agent's reads ---------------------------------------------------------------------------


class AgentFact(NamedTuple):
    """A fact as the agent's wire needs it (plus the version, for ETags)."""

    key: str
    value: str
    category: str
    updated_at: datetime
    source_session_id: str
    version: int


_WIRE = "f.key, f.value, f.category, f.updated_at, f.source_session_id, f.version"
# Active, reviewed, not expired at %(now)s, and the traveller has not paused memory use.
_VISIBLE = (
    "f.subject_id = %(subject)s AND f.status = 'active'"
    " AND (f.expires_at IS NULL OR f.expires_at > %(now)s)"
    " AND NOT EXISTS (SELECT 1 FROM memory_subject s"
    " WHERE s.subject_id = f.subject_id AND s.memory_use_paused)"
)
# Upstream order: the order facts were first written; an update keeps the fact's place.
_STORED_ORDER = "f.created_at, f.id"

SQL_FACTS = f"SELECT {_WIRE} FROM memory_fact f WHERE {_VISIBLE} ORDER BY {_STORED_ORDER}"
SQL_FACT = f"SELECT {_WIRE} FROM memory_fact f WHERE {_VISIBLE} AND f.key = %(key)s"
SQL_SEARCH = (
    f"SELECT {_WIRE} FROM memory_fact f WHERE {_VISIBLE}"
    " AND EXISTS (SELECT 1 FROM unnest(%(terms)s::text[]) AS t(term)"
    " WHERE strpos(lower(f.key || ' ' || f.value || ' ' || f.category), lower(t.term)) > 0)"
    f" ORDER BY {_STORED_ORDER}"
)
# Every non-sensitive constraint in stored order (they may exceed the cap), then the newest
# other facts, as many as the cap leaves room for: that is the first max(cap, constraints) rows
# of one ordering (constraints first), so one sort and a LIMIT, the count an index scan beside it.
_PINNED = "f.category = 'constraint'"
SQL_TIER_ONE = (
    f"SELECT {_WIRE} FROM memory_fact f WHERE {_VISIBLE} AND NOT f.sensitive"
    f" ORDER BY {_PINNED} DESC, CASE WHEN {_PINNED} THEN f.created_at END,"
    f" CASE WHEN {_PINNED} THEN f.id END, f.updated_at DESC, {_STORED_ORDER}"
    " LIMIT greatest(%(cap)s, (SELECT count(*) FROM memory_fact c"
    " WHERE c.subject_id = %(subject)s AND c.category = 'constraint' AND c.status = 'active'"
    " AND NOT c.sensitive AND (c.expires_at IS NULL OR c.expires_at > %(now)s)))"
)
SQL_PURGE_GENERATION = (
    "SELECT coalesce((SELECT purge_generation FROM memory_subject"
    " WHERE subject_id = %(subject)s), 0)"
)


def search_terms(query: str) -> list[str]:
    """Upstream search splits the query on whitespace; the database lower-cases both sides."""
    return query.split()


def _rows(sql: str, params: dict[str, Any]) -> list[AgentFact]:
    with hot_cursor() as cursor:
        cursor.execute(sql, params)
        return [AgentFact._make(row) for row in cursor.fetchall()]


def _orm_visible(subject_id: str) -> list[AgentFact]:
    rows = (
        MemoryFact.objects.filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()),
            subject_id=subject_id,
            status=FactStatus.ACTIVE,
            subject__memory_use_paused=False,
        )
        .order_by("created_at", "id")
        .values_list(*AgentFact._fields)
    )
    return [AgentFact._make(row) for row in rows]


def memory_enabled() -> bool:
    """The airline's master switch (cached like the rest of the settings)."""
    return memory_settings().memory_enabled


def facts_for_agent(subject_id: str) -> list[AgentFact]:
    """What the agent may use: active, unexpired, reviewed; nothing if the traveller paused use
    or memory is off. In the order the facts were first written."""
    if not memory_settings().memory_enabled:
        return []
    if not is_postgresql():
        return _orm_visible(subject_id)
    return _rows(SQL_FACTS, {"subject": subject_id, "now": timezone.now()})


def fact_for_agent(subject_id: str, key: str) -> AgentFact | None:
    if not memory_settings().memory_enabled:
        return None
    if not is_postgresql():
        return next((fact for fact in _orm_visible(subject_id) if fact.key == key), None)
    rows = _rows(SQL_FACT, {"subject": subject_id, "key": key, "now": timezone.now()})
    return rows[0] if rows else None


def tier_one(subject_id: str, *, cap: int | None = None) -> list[AgentFact]:
    """What the agent injects into every turn; empty when memory is off."""
    config = memory_settings()
    if not config.memory_enabled:
        return []
    cap = config.tier_one_cap if cap is None else cap
    if not is_postgresql():
        sensitive = set(
            MemoryFact.objects.filter(subject_id=subject_id, sensitive=True).values_list(
                "key", flat=True
            )
        )
        usable = [fact for fact in _orm_visible(subject_id) if fact.key not in sensitive]
        constraints = [fact for fact in usable if fact.category == Category.CONSTRAINT]
        others = sorted(
            (fact for fact in usable if fact.category != Category.CONSTRAINT),
            key=lambda fact: fact.updated_at,
            reverse=True,
        )
        return constraints + others[: max(0, cap - len(constraints))]
    return _rows(SQL_TIER_ONE, {"subject": subject_id, "now": timezone.now(), "cap": cap})


def facts_search(subject_id: str, query: str) -> list[AgentFact]:
    """Recall on demand (upstream search: any whitespace-separated term is a case-insensitive
    substring of "{key} {value} {category}"; an empty query returns all). Sensitive (approved)
    facts are found here, never in tier one."""
    terms = search_terms(query)
    if not terms:
        return facts_for_agent(subject_id)
    if not memory_settings().memory_enabled:
        return []
    if not is_postgresql():
        lowered = [term.lower() for term in terms]
        return [
            fact
            for fact in _orm_visible(subject_id)
            if any(term in f"{fact.key} {fact.value} {fact.category}".lower() for term in lowered)
        ]
    return _rows(SQL_SEARCH, {"subject": subject_id, "now": timezone.now(), "terms": terms})


def purge_generation(subject_id: str) -> int:
    """0 for a subject never purged (or never seen)."""
    with hot_cursor() as cursor:
        cursor.execute(SQL_PURGE_GENERATION, {"subject": subject_id})
        return cursor.fetchone()[0]


# --- staff and portal reads ----------------------------------------------------------------------


def subject_get(subject_id: str) -> Subject | None:
    return Subject.objects.filter(subject_id=subject_id).first()


def subject_facts(subject_id: str) -> list[MemoryFact]:
    """Every fact held about a traveller, pending and expired included (staff and portal)."""
    return list(MemoryFact.objects.filter(subject_id=subject_id).order_by("category", "key"))


def subject_fact(subject_id: str, key: str) -> MemoryFact | None:
    """One of a traveller's facts by its exact key, pending and expired included."""
    return MemoryFact.objects.filter(subject_id=subject_id, key=key).first()


def fact_history(subject_id: str, key: str) -> QuerySet[FactEvent]:
    """Every event of one fact, including those from before it was last erased (their key is
    now the digest). `key` may itself be a digest, as an erased fact's events show it. Found
    through the keyed hash every event stores (fact_event_subject_hash)."""
    return (
        FactEvent.objects.filter(
            subject_id=subject_id, key_hash__in=history_hashes(subject_id, key)
        )
        .select_related("actor_user")
        .order_by("created_at", "id")
    )


def subject_timeline(subject_id: str, *, limit: int = 200) -> list[FactEvent]:
    """The newest events of a traveller, all keys, for the audit view."""
    return list(
        FactEvent.objects.filter(subject_id=subject_id)
        .select_related("actor_user")
        .order_by("-created_at", "-id")[:limit]
    )


def subjects_overview(*, query: str = "", limit: int = 50) -> list[Subject]:
    """Travellers with their fact counts for the staff landing page: one query whatever the size."""
    subjects = Subject.objects.annotate(
        fact_count=Count("facts"),
        pending_count=Count("facts", filter=Q(facts__status=FactStatus.PENDING_REVIEW)),
        sensitive_count=Count("facts", filter=Q(facts__sensitive=True)),
    )
    if query:
        subjects = subjects.filter(subject_id__icontains=query.strip())
    return list(subjects.order_by("-updated_at", "subject_id")[:limit])


@dataclass(frozen=True)
class ClearReceipt:
    """What a traveller keeps after "forget everything": proof that can be looked up later."""

    number: str
    cleared_at: datetime
    facts_erased: int
    subject_id: str


def receipt_from_event(event: FactEvent) -> ClearReceipt:
    after = event.after or {}
    return ClearReceipt(
        number=event.receipt,
        cleared_at=event.created_at,
        facts_erased=int(after.get("facts_deleted", 0)),
        subject_id=event.subject_id,
    )


def clear_receipt_get(number: str, *, subject_id: str | None = None) -> ClearReceipt | None:
    """The receipt with this number, from the subject_cleared event that carries it; with
    `subject_id`, only if it belongs to that traveller (the portal shows a traveller only their
    own receipts)."""
    number = number.strip().upper()
    if not number or len(number) > 40:
        return None
    events = FactEvent.objects.filter(action=EventAction.SUBJECT_CLEARED, receipt=number)
    if subject_id is not None:
        events = events.filter(subject_id=subject_id)
    event = events.order_by("id").first()
    return receipt_from_event(event) if event else None


def subject_events(subject_id: str) -> list[FactEvent]:
    """A traveller's whole history, oldest first (their data export)."""
    return list(FactEvent.objects.filter(subject_id=subject_id).order_by("created_at", "id"))


# --- portal reads: the traveller's list is paginated, so each is a fixed number of queries ------

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
    from django.db.models import Case, IntegerField, Value, When

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


EXPORT_FIELDS = ("subject_id", "key", "value", "category", "updated_at", "source_session_id")


def facts_for_export(*, subject_id: str | None = None) -> Iterator[dict[str, Any]]:
    """Every fact held (pending and expired included), traveller by traveller in stored order,
    streamed: the JSON Lines export that import_memory reads back."""
    rows = MemoryFact.objects.order_by("subject_id", "created_at", "id")
    if subject_id is not None:
        rows = rows.filter(subject_id=subject_id)
    return rows.values(*EXPORT_FIELDS).iterator(chunk_size=2000)


def write_filter_problems() -> dict[int, str]:
    """Stored blocked patterns the write filter cannot use (position -> problem), read from the
    row itself, not the cache. Any entry means the filter fails closed; /healthz reports it."""
    from .validation import blocked_pattern_errors

    patterns = MemorySettings.objects.filter(pk=1).values_list("blocked_patterns", flat=True)
    return blocked_pattern_errors(next(iter(patterns), []))


# === Staff dashboard ============================================================================
# Reads for the support pages (memoryadmin/staff). Each is a fixed number of queries whatever the
# number of facts or events; lists come back as querysets so the views can paginate them in SQL.

STAFF_PAGE_SIZE = 50
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
DELETED_ACTIONS = ("deleted", "rejected", "subject_cleared")


def staff_overview_counts() -> dict[str, object]:
    """The numbers on the overview page: three aggregate queries."""
    from datetime import timedelta

    from memoryadmin.extraction.models import ExtractionJob, JobStatus

    now = timezone.now()
    facts = MemoryFact.objects.aggregate(
        total=Count("id"),
        preference=Count("id", filter=Q(category=Category.PREFERENCE)),
        constraint=Count("id", filter=Q(category=Category.CONSTRAINT)),
        context=Count("id", filter=Q(category=Category.CONTEXT)),
        pending=Count("id", filter=Q(status=FactStatus.PENDING_REVIEW)),
        sensitive=Count("id", filter=Q(sensitive=True)),
        expiring=Count(
            "id", filter=Q(expires_at__gt=now, expires_at__lte=now + timedelta(days=7))
        ),
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
        "failed_jobs": ExtractionJob.objects.filter(
            status=JobStatus.FAILED, finished_at__gte=now - timedelta(hours=24)
        ).count(),
    }


def staff_activity_by_day(*, days: int = CHART_DAYS) -> list[dict[str, object]]:
    """Facts learned, changed and deleted per day (UTC) over the last `days`, zeros included."""
    from datetime import timedelta

    from django.db.models.functions import TruncDate

    today = timezone.now().date()
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


def staff_travellers(query: str = "") -> QuerySet[Subject]:
    """Travellers for the staff list, newest change first, with their fact counts.

    A query matches a traveller id prefix, a "forget everything" receipt number, or travellers
    holding a fact whose value contains every word (ILIKE, which the pg_trgm index on
    memory_fact.value serves on PostgreSQL).
    """
    from django.db.models import Exists, Max, OuterRef

    subjects = Subject.objects.annotate(
        fact_count=Count("facts"),
        pending_count=Count("facts", filter=Q(facts__status=FactStatus.PENDING_REVIEW)),
        sensitive_count=Count("facts", filter=Q(facts__sensitive=True)),
        last_change=Max("facts__updated_at"),
    )
    query = query.strip()
    if query:
        words = query.split()[:8]
        matching = MemoryFact.objects.filter(subject_id=OuterRef("subject_id"))
        for word in words:
            matching = matching.filter(value__icontains=word)
        receipts = FactEvent.objects.filter(
            action=EventAction.SUBJECT_CLEARED, receipt=query.upper()
        ).values("subject_id")
        subjects = subjects.filter(
            Q(subject_id__startswith=query) | Exists(matching) | Q(subject_id__in=receipts)
        )
    return subjects.order_by("-updated_at", "subject_id")


STAFF_FACT_SORTS = {
    "": ("created_at", "id"),  # the order the agent sees them in
    "key": ("key",),
    "category": ("category", "created_at", "id"),
    "status": ("status", "created_at", "id"),
    "updated": ("-updated_at", "id"),
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


def staff_fact(subject_id: str, key: str) -> MemoryFact | None:
    return MemoryFact.objects.filter(subject_id=subject_id, key=key).first()


def staff_facts_by_keys(subject_id: str, keys: list[str]) -> list[MemoryFact]:
    return list(
        MemoryFact.objects.filter(subject_id=subject_id, key__in=keys).order_by("created_at", "id")
    )


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
