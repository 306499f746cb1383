"""The agent's reads, the cached memory configuration, and the reads that the write side and
several faces share. Each one is a fixed number of queries. Reads only the staff pages, the portal
or the extraction jobs need live with them (`staff/selectors.py`, `portal/selectors.py`,
`extraction/selectors.py`); this module imports none of them.

The agent's reads (`facts_for_agent`, `fact_for_agent`, `tier_one`, `facts_search`,
`purge_generation`) sit on every turn of the agent, so each is one fixed SQL statement that
returns only the wire columns (no ORM query building, no model instances): building the ORM
query for the visibility filter used to cost more than running it. The SQL text (`facts/sql.py`,
also importable from here) is shared with
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
from django.db.models import QuerySet
from django.utils import timezone

from memoryadmin import db
from memoryadmin.db import hot_cursor

from .keyhash import history_hashes, key_digest
from .models import (
    EventAction,
    FactEvent,
    FactStatus,
    MemoryFact,
    MemorySettings,
    PolicyEvent,
    RetentionRule,
    Subject,
)
from .sql import (  # the agent's reads; importable from here too
    SQL_FACT,
    SQL_FACTS,
    SQL_PURGE_GENERATION,
    SQL_SEARCH,
    SQL_TIER_ONE,
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
    return settings.MEMORY_CONFIG_CACHE_SECONDS


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


def search_terms(query: str) -> list[str]:
    """Upstream search splits the query on whitespace; the database lower-cases both sides."""
    return query.split()


def search_terms_param(terms: list[str]) -> str:
    """SQL_SEARCH's `terms`: joined by single spaces, which no term holds (`search_terms` split
    on every whitespace), so the statement's `string_to_array(terms, ' ')` gives them back."""
    return " ".join(terms)


def _rows(sql: str, params: dict[str, Any]) -> list[AgentFact]:
    """On a replica that has replayed the traveller's last write, else the primary
    (`db.subject_read`: this process's copy of the traveller's position, else Redis, before
    the query; inside a transaction, always the primary)."""

    def read(using: str) -> list[AgentFact]:
        with hot_cursor(using) as cursor:
            cursor.execute(sql, params)
            return [AgentFact._make(row) for row in cursor.fetchall()]

    if not settings.DATABASE_REPLICAS:
        return read(db.PRIMARY)
    return db.subject_read(params["subject"], read)


def memory_enabled() -> bool:
    """The airline's master switch (cached like the rest of the settings)."""
    return memory_settings().memory_enabled


def facts_for_agent(subject_id: str) -> list[AgentFact]:
    """What the agent may use: active, unexpired, reviewed; nothing if the traveller paused use
    or memory is off. In the order the facts were first written."""
    if not memory_settings().memory_enabled:
        return []
    return _rows(SQL_FACTS, {"subject": subject_id, "now": timezone.now()})


def fact_for_agent(subject_id: str, key: str) -> AgentFact | None:
    if not memory_settings().memory_enabled:
        return None
    rows = _rows(SQL_FACT, {"subject": subject_id, "key": key, "now": timezone.now()})
    return rows[0] if rows else None


def tier_one(subject_id: str, *, cap: int | None = None) -> list[AgentFact]:
    """What the agent injects into every turn; empty when memory is off."""
    config = memory_settings()
    if not config.memory_enabled:
        return []
    cap = config.tier_one_cap if cap is None else cap
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
    params = {"subject": subject_id, "now": timezone.now(), "terms": search_terms_param(terms)}
    return _rows(SQL_SEARCH, params)


def purge_generation(subject_id: str) -> int:
    """0 for a subject never purged (or never seen)."""

    def read(using: str) -> int:
        with hot_cursor(using) as cursor:
            cursor.execute(SQL_PURGE_GENERATION, {"subject": subject_id})
            return cursor.fetchone()[0]

    if not settings.DATABASE_REPLICAS:
        return read(db.PRIMARY)
    return db.subject_read(subject_id, read)


# --- reads the faces share -----------------------------------------------------------------------


def subject_get(subject_id: str) -> Subject | None:
    return Subject.objects.filter(subject_id=subject_id).first()


def subject_facts(subject_id: str) -> list[MemoryFact]:
    """Every fact held about a traveller, pending and expired included (staff and portal)."""
    return list(MemoryFact.objects.filter(subject_id=subject_id).order_by("category", "key"))


def subject_fact(subject_id: str, key: str) -> MemoryFact | None:
    """One of a traveller's facts by its exact key, pending and expired included."""
    return MemoryFact.objects.filter(subject_id=subject_id, key=key).first()


def fact_waiting_for_review(subject_id: str, key: str) -> bool:
    """Whether the agent's read missed this key only because the fact is held for review (so
    the API can say so instead of "no such fact"). Run after a miss, never on the hot path."""
    return MemoryFact.objects.filter(
        subject_id=subject_id, key=key, status=FactStatus.PENDING_REVIEW
    ).exists()


def expiry_if_flagged_sensitive(fact: MemoryFact) -> datetime | None:
    """The day flagging this fact sensitive would make it expire, when a retention rule for
    sensitive facts brings its expiry forward (None: the flag changes nothing about when it goes;
    a pinned expiry stays)."""
    from . import retention

    if fact.sensitive or fact.expiry_pinned:
        return None
    rule = retention.winning_rule(
        retention_rules(), key=fact.key, category=fact.category, sensitive=True
    )
    new = retention.expiry_for(rule, fact.updated_at)
    if new is None or (fact.expires_at is not None and new >= fact.expires_at):
        return None
    return new


def fact_revealed_since(subject_id: str, key: str, *, user_id: int, since: datetime) -> bool:
    """Whether this staff user revealed the fact's value (a `value_revealed` event) since then."""
    return FactEvent.objects.filter(
        subject_id=subject_id,
        key_hash=key_digest(subject_id, key),
        action=EventAction.VALUE_REVEALED,
        actor_user_id=user_id,
        created_at__gte=since,
    ).exists()


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


def use_retention_days(row: MemorySettings) -> int:
    """The days use receipts are kept: the settings row's, else MEMORY_USE_RETENTION_DAYS."""
    days = row.use_retention_days
    return settings.MEMORY_USE_RETENTION_DAYS if days is None else days


# The policy history's filter: each kind and the actions it holds.
POLICY_KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "settings": ("Settings", ("settings_changed", "use_retention_changed")),
    "rules": ("Retention rules", ("rule_created", "rule_updated", "rule_deleted")),
    "tokens": ("Service tokens", ("token_issued", "token_revoked")),
    "requests": ("Privacy requests", ("privacy_request",)),
    "webhooks": ("Webhook recipients", ("webhook_recipient", "webhook_replayed")),
}


def policy_history(*, kind: str = "") -> QuerySet[PolicyEvent]:
    """The policy events newest first with their actors, of one kind (`POLICY_KINDS`) or all:
    a query set, for the page to page through."""
    rows = PolicyEvent.objects.select_related("actor_user").order_by("-created_at", "-id")
    if kind in POLICY_KINDS:
        rows = rows.filter(action__in=POLICY_KINDS[kind][1])
    return rows
