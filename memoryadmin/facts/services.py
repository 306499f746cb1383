"""Every write to the system of record. Each service is keyword-only, one transaction, and
writes its own FactEvent naming the actor. Nothing else in the code base mutates MemoryFact.

Writes for one traveller are serialized by locking their Subject row: concurrent upserts of the
same key then see each other's result, so versions count real changes and no write is lost.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

from django.db import connection, models, transaction
from django.utils import timezone
from psycopg.pq import TransactionStatus

from memoryadmin.client.types import SESSION_ID_MAX_LENGTH

from . import erasure, retention
from .actors import Actor
from .db import hot_cursor, in_own_pipelined_transaction, is_postgresql, pipelined
from .errors import (
    FactBlocked,
    FactConflict,
    FactInvalid,
    FactLearningPaused,
    FactMemoryDisabled,
    FactNotFound,
    FactStateError,
)
from .keyhash import event_key_hash
from .models import (
    SUBJECT_ID_MAX_LENGTH,
    ActorKind,
    EventAction,
    FactEvent,
    FactStatus,
    MemoryFact,
    MemorySettings,
    RetentionRule,
    RetentionRun,
    RunStatus,
    Subject,
)
from .selectors import (
    AgentFact,
    ClearReceipt,
    MemoryConfig,
    facts_for_agent,
    memory_config,
    memory_settings,
    receipt_from_event,
    retention_rules,
)
from .validation import (
    CleanFact,
    MemoryWriteFilter,
    classify_sensitive,
    normalize_key,
    normalize_value,
    sanitize_text,
    validate_fact,
)

REASON_MAX_LENGTH = 500


@dataclass(frozen=True)
class FactDraft:
    """A candidate fact as a caller hands it in; validate_fact cleans it."""

    key: Any
    value: Any
    category: Any = None


@dataclass
class UpsertResult:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    sent_to_review: list[str] = field(default_factory=list)
    states: dict[str, FactState] = field(default_factory=dict)
    agent_facts: list[AgentFact] = field(default_factory=list)

    @property
    def changed(self) -> list[str]:
        return self.created + self.updated


# --- helpers ------------------------------------------------------------------------------------


def clean_subject_id(subject_id: object) -> str:
    """Subject ids are opaque, but bounded and free of control characters."""
    if not isinstance(subject_id, str):
        raise FactInvalid("Subject id must be text.", fields={"subject_id": "Must be text."})
    if (
        not subject_id
        or sanitize_text(subject_id) != subject_id
        or " " in subject_id
        or "/" in subject_id  # it travels as one URL path segment
        or subject_id in {".", ".."}  # which URL resolution would remove or climb out of
    ):
        raise FactInvalid(
            "Subject id is empty, is . or .., or has spaces, slashes or control characters.",
            fields={
                "subject_id": "Must be non-empty, not . or .., without spaces, slashes or "
                "control chars."
            },
        )
    if len(subject_id) > SUBJECT_ID_MAX_LENGTH:
        raise FactInvalid(
            "Subject id is too long.",
            fields={"subject_id": f"At most {SUBJECT_ID_MAX_LENGTH} characters."},
        )
    return subject_id


def _clean_reason(reason: str) -> str:
    return sanitize_text(reason or "")[:REASON_MAX_LENGTH]


def _lock_subject(subject_id: str) -> Subject:
    """Create the subject if needed and lock its row for the rest of the transaction."""
    subject = Subject.objects.select_for_update().filter(subject_id=subject_id).first()
    if subject is None:
        # ON CONFLICT DO NOTHING waits for a concurrent creator instead of failing.
        Subject.objects.bulk_create([Subject(subject_id=subject_id)], ignore_conflicts=True)
        subject = Subject.objects.select_for_update().get(subject_id=subject_id)
    return subject


def _snapshot(fact: MemoryFact) -> dict[str, Any]:
    return {
        "value": fact.value,
        "category": fact.category,
        "status": fact.status,
        "sensitive": fact.sensitive,
        "expires_at": fact.expires_at.isoformat() if fact.expires_at else None,
        "version": fact.version,
    }


def _record(
    *,
    subject_id: str,
    key: str,
    action: EventAction,
    actor: Actor,
    reason: str,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    session_tag: str = "",
    receipt: str = "",
) -> FactEvent:
    return FactEvent.objects.create(
        subject_id=subject_id,
        key=key,
        action=action,
        actor_kind=actor.kind,
        actor_user=actor.user,
        actor_label=actor.label[:200],
        reason=_clean_reason(reason),
        before=before,
        after=after,
        session_tag=session_tag,
        receipt=receipt,
    )


def _retention_rules() -> tuple[RetentionRule, ...]:
    return retention_rules()  # cached per process, invalidated when a rule changes


def matching_rule(
    rules: Iterable[RetentionRule], *, key: str, category: str, sensitive: bool
) -> RetentionRule | None:
    """The rule that governs a fact (see facts.retention for the precedence)."""
    return retention.winning_rule(rules, key=key, category=category, sensitive=sensitive)


def _apply_retention(fact: MemoryFact, rules: Iterable[RetentionRule]) -> None:
    if fact.expiry_pinned:
        return
    rule = matching_rule(rules, key=fact.key, category=fact.category, sensitive=fact.sensitive)
    fact.expires_at = retention.expiry_for(rule, fact.updated_at)


def _load_for_update(subject_id: str, key: str, expected_version: int | None) -> MemoryFact:
    clean_subject_id(subject_id)
    _lock_subject(subject_id)
    fact = MemoryFact.objects.filter(subject_id=subject_id, key=normalize_key(key)).first()
    if fact is None:
        raise FactNotFound("No such fact.")
    if expected_version is not None and fact.version != expected_version:
        raise FactConflict(
            "The fact was changed by someone else since you loaded it; reload and try again.",
            current_version=fact.version,
        )
    return fact


def _commit_change(
    fact: MemoryFact, *, before: dict[str, Any], action: EventAction, actor: Actor, reason: str
) -> MemoryFact:
    """Bump the version, save, and record the event with both snapshots."""
    fact.version += 1
    fact.save()
    _record(
        subject_id=fact.subject_id,
        key=fact.key,
        action=action,
        actor=actor,
        reason=reason,
        before=before,
        after=_snapshot(fact),
    )
    return fact


def _is_expired(fact: MemoryFact, now: datetime) -> bool:
    return fact.expires_at is not None and fact.expires_at <= now


# --- services -----------------------------------------------------------------------------------


_FACT_COLUMNS = (
    "id, key, value, category, status, sensitive, expires_at, expiry_pinned, version,"
    " source_session_id, created_at, updated_at"
)
# The rows of _SQL_EXISTING come as tuples in this order (no cursor.description to build).
_FACT_COLUMN_NAMES = tuple(name.strip() for name in _FACT_COLUMNS.split(","))
_SQL_LOCK_SUBJECT = (
    'SELECT memory_paused, memory_use_paused FROM "memory_subject"'
    " WHERE subject_id = %s FOR UPDATE"
)
_SQL_NEW_SUBJECT = (
    'INSERT INTO "memory_subject" (subject_id, purge_generation, memory_paused,'
    " memory_use_paused, legal_hold, created_at, updated_at)"
    " VALUES (%s, 0, false, false, false, %s, %s) ON CONFLICT (subject_id) DO NOTHING"
)
_SQL_EXISTING = (
    f'SELECT {_FACT_COLUMNS} FROM "memory_fact" WHERE subject_id = %s AND key = ANY(%s)'
)
# One statement per kind of change, whatever the batch size. The rows travel as one JSON
# document each (jsonb_to_recordset), not as arrays: psycopg dumps arrays element by element in
# Python, which cost more than running the statements.
_SQL_INSERT_FACTS = (
    'INSERT INTO "memory_fact" (subject_id, key, value, category, updated_at,'
    " source_session_id, created_at, origin, status, sensitive, expires_at, expiry_pinned,"
    " version)"
    " SELECT %s, r.key, r.value, r.category, %s, %s, %s, %s, r.status, r.sensitive,"
    " r.expires_at, false, 1"
    " FROM ROWS FROM (jsonb_to_recordset(%s::jsonb) AS (key text, value text, category text,"
    " status text, sensitive boolean, expires_at timestamptz)) WITH ORDINALITY"
    " AS r(key, value, category, status, sensitive, expires_at, n) ORDER BY r.n"
)
_SQL_UPDATE_FACTS = (
    'UPDATE "memory_fact" AS f SET value = r.value, category = r.category, updated_at = %s,'
    " source_session_id = r.source_session_id, status = r.status, sensitive = r.sensitive,"
    " expires_at = r.expires_at, expiry_pinned = r.expiry_pinned, version = r.version"
    " FROM jsonb_to_recordset(%s::jsonb) AS r(id bigint, value text, category text,"
    " source_session_id text, status text, sensitive boolean, expires_at timestamptz,"
    " expiry_pinned boolean, version integer) WHERE f.id = r.id"
)
_SQL_INSERT_EVENTS = (
    'INSERT INTO "memory_fact_event" (subject_id, key, key_hash, action, actor_kind,'
    " actor_user_id, actor_label, reason, before, after, session_tag, created_at)"
    " SELECT %s, r.key, r.key_hash, r.action, %s, %s, %s, %s, r.before, r.after, %s, %s"
    " FROM ROWS FROM (jsonb_to_recordset(%s::jsonb) AS (key text, key_hash text, action text,"
    " before jsonb, after jsonb)) WITH ORDINALITY"
    " AS r(key, key_hash, action, before, after, n) ORDER BY r.n"
)
_INSERT_COLUMNS = ("key", "value", "category", "status", "sensitive", "expires_at")
_UPDATE_COLUMNS = (
    "id", "value", "category", "source_session_id", "status", "sensitive", "expires_at",
    "expiry_pinned", "version",
)


def _json_rows(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> str:
    return json.dumps(
        [{name: row[name] for name in columns} for row in rows],
        default=lambda value: value.isoformat(),  # the datetimes (expires_at)
    )


def _json_events(subject_id: str, events: list[tuple[str, str, str | None, str]]) -> str:
    """The events' document; their snapshots are already JSON text, spliced in as they are."""
    parts = []
    for key, action, before, after in events:
        head = json.dumps({"key": key, "key_hash": event_key_hash(subject_id, key),
                           "action": str(action)})
        parts.append(f'{head[:-1]},"before":{before or "null"},"after":{after}}}')
    return "[" + ",".join(parts) + "]"


@dataclass(frozen=True)
class FactState:
    """A fact as this write committed it (or found it unchanged), so callers can answer from it
    without reading again (a later read could show another writer's state)."""

    key: str
    value: str
    category: str
    updated_at: datetime
    source_session_id: str
    version: int
    status: str
    sensitive: bool
    expires_at: datetime | None
    agent_visible: bool  # active, unexpired, memory on, the traveller has not paused its use


def _upsert_read(
    subject_id: str, keys: list[str], now: datetime
) -> tuple[bool, bool, dict[str, dict[str, Any]]]:
    """Lock (creating if needed) the subject row and read the named facts: two statements, one
    round trip in pipeline mode. Returns (memory_paused, memory_use_paused, existing by key).

    The read is a statement of its own after the lock, so under READ COMMITTED it sees what a
    writer that held the lock before us committed (one statement doing both would not)."""
    if not is_postgresql():  # the embedded SQLite default: no FOR UPDATE
        subject = _lock_subject(subject_id)
        rows = MemoryFact.objects.filter(subject_id=subject_id, key__in=keys).values(
            *_FACT_COLUMN_NAMES
        )
        return subject.memory_paused, subject.memory_use_paused, {r["key"]: r for r in rows}
    with hot_cursor() as lock, hot_cursor() as read:
        lock.execute(_SQL_LOCK_SUBJECT, [subject_id])
        read.execute(_SQL_EXISTING, [subject_id, keys])
        row = lock.fetchone()
        found = read.fetchall()
        if row is None:
            # A new traveller. ON CONFLICT DO NOTHING waits for a concurrent creator instead of
            # failing; the facts are read again once the lock is ours.
            lock.execute(_SQL_NEW_SUBJECT, [subject_id, now, now])
            lock.execute(_SQL_LOCK_SUBJECT, [subject_id])
            read.execute(_SQL_EXISTING, [subject_id, keys])
            row = lock.fetchone()
            found = read.fetchall()
    existing = {r[1]: dict(zip(_FACT_COLUMN_NAMES, r, strict=True)) for r in found}
    return bool(row[0]), bool(row[1]), existing


def _upsert_write(
    *,
    subject_id: str,
    actor: Actor,
    reason: str,
    session_tag: str,
    now: datetime,
    inserts: list[dict[str, Any]],
    updates: list[dict[str, Any]],
    events: list[tuple[str, str, str | None, str]],
) -> None:
    """At most three statements on PostgreSQL; the ORM (a statement per row) elsewhere."""
    if not is_postgresql():
        _upsert_write_orm(
            subject_id=subject_id, actor=actor, reason=reason, session_tag=session_tag, now=now,
            inserts=inserts, updates=updates, events=events,
        )
        return
    with hot_cursor() as cursor:
        for sql, params in _upsert_statements(
            subject_id=subject_id, actor=actor, reason=reason, session_tag=session_tag, now=now,
            inserts=inserts, updates=updates, events=events,
        ):
            cursor.execute(sql, params)


def _upsert_statements(
    *,
    subject_id: str,
    actor: Actor,
    reason: str,
    session_tag: str,
    now: datetime,
    inserts: list[dict[str, Any]],
    updates: list[dict[str, Any]],
    events: list[tuple[str, str, str | None, str]],
) -> list[tuple[str, list[Any]]]:
    """The PostgreSQL statements of a planned upsert: at most three, each batch of rows one JSON
    document."""
    statements: list[tuple[str, list[Any]]] = []
    if inserts:
        statements.append((
            _SQL_INSERT_FACTS,
            [subject_id, now, session_tag, now, str(actor.origin),
             _json_rows(inserts, _INSERT_COLUMNS)],
        ))
    if updates:
        statements.append((_SQL_UPDATE_FACTS, [now, _json_rows(updates, _UPDATE_COLUMNS)]))
    if events:
        statements.append((
            _SQL_INSERT_EVENTS,
            [
                subject_id,
                str(actor.kind),
                actor.user.pk if actor.user is not None else None,
                actor.label[:200],
                _clean_reason(reason),
                session_tag,
                now,
                _json_events(subject_id, events),
            ],
        ))
    return statements


def _upsert_write_orm(
    *,
    subject_id: str,
    actor: Actor,
    reason: str,
    session_tag: str,
    now: datetime,
    inserts: list[dict[str, Any]],
    updates: list[dict[str, Any]],
    events: list[tuple[str, str, str | None, str]],
) -> None:
    fields = ("value", "category", "source_session_id", "status", "sensitive", "expires_at",
              "expiry_pinned", "version")
    MemoryFact.objects.bulk_create(
        [
            MemoryFact(
                subject_id=subject_id, key=row["key"], created_at=now, updated_at=now,
                origin=actor.origin, **{name: row[name] for name in fields},
            )
            for row in inserts
        ]
    )
    for row in updates:
        MemoryFact.objects.filter(pk=row["id"]).update(
            updated_at=now, **{name: row[name] for name in fields}
        )
    FactEvent.objects.bulk_create(
        [
            FactEvent(
                subject_id=subject_id, key=key, action=action, actor_kind=actor.kind,
                actor_user=actor.user, actor_label=actor.label[:200],
                reason=_clean_reason(reason), session_tag=session_tag,
                before=json.loads(before) if before else None, after=json.loads(after),
            )
            for key, action, before, after in events
        ]
    )


def _row_snapshot(row: dict[str, Any]) -> dict[str, Any]:
    expires_at = row["expires_at"]
    return {
        "value": row["value"],
        "category": row["category"],
        "status": row["status"],
        "sensitive": row["sensitive"],
        "expires_at": expires_at.isoformat() if expires_at else None,
        "version": row["version"],
    }


def _row_expiry(row: dict[str, Any], rules: Iterable[RetentionRule]) -> datetime | None:
    if row["expiry_pinned"]:
        return row["expires_at"]
    rule = matching_rule(
        rules, key=row["key"], category=row["category"], sensitive=row["sensitive"]
    )
    return retention.expiry_for(rule, row["updated_at"])


def _upsert_clean(
    *,
    subject_id: str,
    facts: Sequence[FactDraft],
    actor: Actor,
    session_tag: str,
    config: MemoryConfig,
) -> dict[str, CleanFact]:
    """Validate and filter a batch before anything is read or written."""
    clean_subject_id(subject_id)
    if len(session_tag) > SESSION_ID_MAX_LENGTH:
        raise FactInvalid("Session tag too long.", fields={"session_id": "Too long."})
    cleaned: dict[str, CleanFact] = {}
    errors: dict[str, str] = {}
    if actor.is_automated and not config.settings.memory_enabled:
        raise FactMemoryDisabled("Memory is not enabled; nothing is saved.")
    write_filter = MemoryWriteFilter(config.settings.blocked_patterns)
    for index, draft in enumerate(facts):
        try:
            clean = validate_fact(draft.key, draft.value, draft.category)
            # The raw key too: normalizing turns "a@b.com" into "a_b_com", which no pattern sees.
            write_filter.enforce(clean.key, clean.value, raw_key=sanitize_text(draft.key))
        except FactInvalid as exc:
            errors.update({f"facts[{index}].{name}": msg for name, msg in exc.fields.items()})
            continue
        except FactBlocked as exc:  # name the position, never the value
            exc.fields = {f"facts[{index}].{name}": msg for name, msg in exc.fields.items()}
            raise
        cleaned[clean.key] = clean  # a repeated key in one batch: the last one wins
    if errors:
        raise FactInvalid("Some facts are not valid.", fields=errors)
    return cleaned


def _upsert_check_paused(actor: Actor, memory_paused: bool) -> None:
    if actor.is_automated and memory_paused:
        raise FactLearningPaused("The traveller has paused memory; nothing new is saved.")


@dataclass
class _UpsertPlan:
    result: UpsertResult
    inserts: list[dict[str, Any]]
    updates: list[dict[str, Any]]
    events: list[tuple[str, str, str | None, str]]  # key, action, before, after (JSON)


def _upsert_plan(
    *,
    cleaned: Mapping[str, CleanFact],
    existing: Mapping[str, dict[str, Any]],
    use_paused: bool,
    actor: Actor,
    session_tag: str,
    expected_versions: Mapping[str, int] | None,
    config: MemoryConfig,
    now: datetime,
) -> _UpsertPlan:
    """What the batch changes, decided in Python from the locked rows: no I/O here, so the
    Django path and the async path (DjangoMemoryStore) write exactly the same rows and events."""
    for raw_key, version in (expected_versions or {}).items():
        current = existing.get(normalize_key(raw_key))
        if current is None or current["version"] != version:
            raise FactConflict(
                "The fact was changed since it was read; fetch it again and retry.",
                current_version=current["version"] if current else None,
            )
    result = UpsertResult()
    rules = config.rules
    visible_to_agent = config.settings.memory_enabled and not use_paused
    plan = _UpsertPlan(result=result, inserts=[], updates=[], events=[])
    for key, clean in cleaned.items():
        topic = classify_sensitive(clean.key, clean.value) if actor.is_automated else None
        row = existing.get(key)
        if row is None:
            row = {
                "key": key,
                "value": clean.value,
                "category": str(clean.category),
                "status": FactStatus.PENDING_REVIEW if topic else FactStatus.ACTIVE,
                "sensitive": topic is not None,
                "expiry_pinned": False,
                "expires_at": None,
                "version": 1,
                "source_session_id": session_tag,
                "updated_at": now,
            }
            row["expires_at"] = _row_expiry(row, rules)
            plan.inserts.append(row)
            plan.events.append((key, EventAction.CREATED, None, json.dumps(_row_snapshot(row))))
            result.created.append(key)
        else:
            row = dict(row)
            expired = row["expires_at"] is not None and row["expires_at"] <= now
            if (
                normalize_value(row["value"]) == normalize_value(clean.value)
                and row["category"] == clean.category
                and not expired
            ):
                result.unchanged.append(key)
                result.states[key] = _state(row, visible_to_agent, now)
                continue
            before = json.dumps(_row_snapshot(row))
            row.update(
                value=clean.value,
                category=str(clean.category),
                updated_at=now,
                source_session_id=session_tag or row["source_session_id"],
                version=row["version"] + 1,
            )
            if row["expiry_pinned"] and expired:
                row["expiry_pinned"] = False  # restating an expired fact revives it
            if topic:
                row["sensitive"] = True
                row["status"] = FactStatus.PENDING_REVIEW
            row["expires_at"] = _row_expiry(row, rules)
            plan.updates.append(row)
            plan.events.append((key, EventAction.UPDATED, before, json.dumps(_row_snapshot(row))))
            result.updated.append(key)
        if row["status"] == FactStatus.PENDING_REVIEW:
            result.sent_to_review.append(key)
        result.states[key] = _state(row, visible_to_agent, now)
    return plan


def fact_upsert(
    *,
    subject_id: str,
    facts: Sequence[FactDraft],
    actor: Actor,
    reason: str = "",
    session_tag: str = "",
    expected_versions: Mapping[str, int] | None = None,
    agent_view: bool = False,
    savepoint: bool = True,
    before_commit: Callable[[UpsertResult], None] | None = None,
) -> UpsertResult:
    """Replace by key. The same value (normalized) is a no-op with no event; anything else is a
    created/updated event and a version bump. Facts from the agent or extraction that touch
    special-category topics are marked sensitive and held for review.

    `expected_versions` (key -> version, e.g. from an If-Match header) makes the write
    conditional: if any named fact is missing or at another version, nothing is written.

    A fixed number of statements whatever the batch size: lock the subject, read the named
    facts, one INSERT of the new ones, one UPDATE of the changed ones, one INSERT of their
    events; on PostgreSQL they travel in two round trips (pipeline mode), the COMMIT with the
    writes when this opens the transaction itself. `result.states` is
    what this write committed, key by key; with `agent_view`, `result.agent_facts` is every fact
    the agent may now use, read inside this transaction (so never another writer's later
    state). One transaction (a savepoint inside a caller's). `savepoint=False` is for a caller
    whose own transaction ends whenever this raises (it never catches an error of this call
    and goes on writing): it saves the savepoint's two round trips, and an error here then
    marks the caller's whole transaction for rollback.

    `before_commit(result)` runs after the writes, in the same transaction, for a caller whose
    own bookkeeping must commit with them or not at all (extraction ends its job there). On
    PostgreSQL its statements travel with the writes and the COMMIT, so they must not fetch a
    result: a statement that refuses raises an error, and the whole write rolls back."""
    config = memory_config()
    cleaned = _upsert_clean(
        subject_id=subject_id, facts=facts, actor=actor, session_tag=session_tag, config=config
    )
    if not cleaned:
        if before_commit is not None:  # nothing to write: it runs alone (or in the caller's)
            before_commit(UpsertResult())
        return UpsertResult()
    now = timezone.now()

    def upsert() -> UpsertResult:
        memory_paused, use_paused, existing = _upsert_read(subject_id, list(cleaned), now)
        _upsert_check_paused(actor, memory_paused)
        plan = _upsert_plan(
            cleaned=cleaned,
            existing=existing,
            use_paused=use_paused,
            actor=actor,
            session_tag=session_tag,
            expected_versions=expected_versions,
            config=config,
            now=now,
        )
        _upsert_write(
            subject_id=subject_id, actor=actor, reason=reason, session_tag=session_tag,
            now=now, inserts=plan.inserts, updates=plan.updates, events=plan.events,
        )
        if agent_view:
            plan.result.agent_facts = facts_for_agent(subject_id)
        if before_commit is not None:
            before_commit(plan.result)
        return plan.result

    if (is_postgresql() and not connection.in_atomic_block
            and connection.get_autocommit()):
        return in_own_pipelined_transaction(upsert)
    # The transaction outside the pipeline: entering it costs no round trip, and the pipeline's
    # closing sync (the writes' errors) still happens inside it.
    with transaction.atomic(savepoint=savepoint), pipelined():
        return upsert()


async def fact_upsert_async(
    *,
    conn: Any,
    subject_id: str,
    facts: Sequence[FactDraft],
    actor: Actor,
    config: MemoryConfig,
    reason: str = "",
    session_tag: str = "",
) -> UpsertResult:
    """`fact_upsert` on an async psycopg connection, in one transaction of its own: the same
    validation, plan, statements and audit events, for DjangoMemoryStore's native path (no hop
    to Django's thread). PostgreSQL only; `conn` is in autocommit mode (the store's are);
    `config` is the caller's fresh `memory_config()`.

    Two round trips in pipeline mode: BEGIN, the lock and the read; then the writes and
    COMMIT (a new traveller adds one)."""
    cleaned = _upsert_clean(
        subject_id=subject_id, facts=facts, actor=actor, session_tag=session_tag, config=config
    )
    if not cleaned:
        return UpsertResult()
    now = timezone.now()
    keys = list(cleaned)
    # BEGIN and COMMIT by hand on the autocommit connection: psycopg's transaction() inside a
    # pipeline syncs on entry and on exit, which would double the round trips.
    try:
        async with conn.pipeline():
            lock, read = conn.cursor(), conn.cursor()
            await lock.execute("BEGIN")
            await lock.execute(_SQL_LOCK_SUBJECT, [subject_id])
            await read.execute(_SQL_EXISTING, [subject_id, keys])
            row = await lock.fetchone()
            found = await read.fetchall()
            if row is None:  # a new traveller: create, lock, and read again once locked
                await lock.execute(_SQL_NEW_SUBJECT, [subject_id, now, now])
                await lock.execute(_SQL_LOCK_SUBJECT, [subject_id])
                await read.execute(_SQL_EXISTING, [subject_id, keys])
                row = await lock.fetchone()
                found = await read.fetchall()
            _upsert_check_paused(actor, bool(row[0]))
            plan = _upsert_plan(
                cleaned=cleaned,
                existing={r[1]: dict(zip(_FACT_COLUMN_NAMES, r, strict=True)) for r in found},
                use_paused=bool(row[1]),
                actor=actor,
                session_tag=session_tag,
                expected_versions=None,
                config=config,
                now=now,
            )
            for sql, params in _upsert_statements(
                subject_id=subject_id, actor=actor, reason=reason, session_tag=session_tag,
                now=now, inserts=plan.inserts, updates=plan.updates, events=plan.events,
            ):
                await lock.execute(sql, params)
            await lock.execute("COMMIT")
    except BaseException:
        if not conn.broken and conn.info.transaction_status != TransactionStatus.IDLE:
            await conn.rollback()
        raise
    return plan.result


def _state(row: dict[str, Any], visible_to_agent: bool, now: datetime) -> FactState:
    expires_at = row["expires_at"]
    return FactState(
        key=row["key"],
        value=row["value"],
        category=row["category"],
        updated_at=row["updated_at"],
        source_session_id=row["source_session_id"],
        version=row["version"],
        status=str(row["status"]),
        sensitive=row["sensitive"],
        expires_at=expires_at,
        agent_visible=(
            row["status"] == FactStatus.ACTIVE
            and (expires_at is None or expires_at > now)
            and visible_to_agent
        ),
    )


@transaction.atomic
def fact_edit(
    *,
    subject_id: str,
    key: str,
    expected_version: int,
    actor: Actor,
    value: str | None = None,
    category: str | None = None,
    reason: str = "",
) -> MemoryFact:
    """A person corrects a fact. A stale `expected_version` raises FactConflict: a correction
    never silently overwrites one it did not see."""
    fact = _load_for_update(subject_id, key, expected_version)
    clean = validate_fact(
        fact.key,
        fact.value if value is None else value,
        fact.category if category is None else category,
    )
    MemoryWriteFilter(memory_settings().blocked_patterns).enforce(clean.key, clean.value)
    if (
        normalize_value(clean.value) == normalize_value(fact.value)
        and clean.category == fact.category
    ):
        return fact
    before = _snapshot(fact)
    fact.value = clean.value
    fact.category = clean.category
    fact.updated_at = timezone.now()
    if classify_sensitive(clean.key, clean.value):
        fact.sensitive = True  # masked in staff lists; a person wrote it, so no review needed
    _apply_retention(fact, _retention_rules())
    return _commit_change(
        fact, before=before, action=EventAction.UPDATED, actor=actor, reason=reason
    )


@transaction.atomic
def fact_expire(
    *,
    subject_id: str,
    key: str,
    actor: Actor,
    reason: str = "",
    expected_version: int | None = None,
) -> MemoryFact:
    """Hide the fact from the agent now; the retention sweep deletes it later."""
    fact = _load_for_update(subject_id, key, expected_version)
    before = _snapshot(fact)
    fact.expires_at = timezone.now()
    fact.expiry_pinned = True
    return _commit_change(
        fact, before=before, action=EventAction.EXPIRED, actor=actor, reason=reason
    )


@transaction.atomic
def fact_set_expiry(
    *,
    subject_id: str,
    key: str,
    expires_at: datetime | None,
    actor: Actor,
    reason: str = "",
    expected_version: int | None = None,
) -> MemoryFact:
    """Pin an expiry date, or pass None to hand the fact back to the retention rules."""
    if expires_at is not None and timezone.is_naive(expires_at):
        raise FactInvalid("Expiry needs a time zone.", fields={"expires_at": "Needs a time zone."})
    fact = _load_for_update(subject_id, key, expected_version)
    before = _snapshot(fact)
    fact.expiry_pinned = expires_at is not None
    if expires_at is None:
        _apply_retention(fact, _retention_rules())
    else:
        fact.expires_at = expires_at
    return _commit_change(
        fact, before=before, action=EventAction.EXPIRY_CHANGED, actor=actor, reason=reason
    )


def _set_sensitive(
    *,
    subject_id: str,
    key: str,
    sensitive: bool,
    actor: Actor,
    reason: str,
    expected_version: int | None,
) -> MemoryFact:
    fact = _load_for_update(subject_id, key, expected_version)
    if fact.sensitive == sensitive:
        return fact
    before = _snapshot(fact)
    fact.sensitive = sensitive
    _apply_retention(fact, _retention_rules())  # sensitive facts have their own retention
    action = EventAction.FLAGGED_SENSITIVE if sensitive else EventAction.UNFLAGGED_SENSITIVE
    return _commit_change(fact, before=before, action=action, actor=actor, reason=reason)


@transaction.atomic
def fact_flag_sensitive(
    *,
    subject_id: str,
    key: str,
    actor: Actor,
    reason: str = "",
    expected_version: int | None = None,
) -> MemoryFact:
    """Special-category data: masked for staff, never in tier one, recalled only on demand."""
    return _set_sensitive(
        subject_id=subject_id,
        key=key,
        sensitive=True,
        actor=actor,
        reason=reason,
        expected_version=expected_version,
    )


@transaction.atomic
def fact_unflag_sensitive(
    *,
    subject_id: str,
    key: str,
    actor: Actor,
    reason: str = "",
    expected_version: int | None = None,
) -> MemoryFact:
    return _set_sensitive(
        subject_id=subject_id,
        key=key,
        sensitive=False,
        actor=actor,
        reason=reason,
        expected_version=expected_version,
    )


@transaction.atomic
def fact_approve(
    *,
    subject_id: str,
    key: str,
    actor: Actor,
    reason: str = "",
    expected_version: int | None = None,
) -> MemoryFact:
    """A reviewer lets a held fact through to the agent (it stays sensitive if it was)."""
    fact = _load_for_update(subject_id, key, expected_version)
    if fact.status != FactStatus.PENDING_REVIEW:
        raise FactStateError("Only facts waiting for review can be approved.")
    before = _snapshot(fact)
    fact.status = FactStatus.ACTIVE
    return _commit_change(
        fact, before=before, action=EventAction.APPROVED, actor=actor, reason=reason
    )


def _remove(fact: MemoryFact, *, action: EventAction, actor: Actor, reason: str) -> None:
    erasure.erase_facts(
        [(fact.subject_id, fact.key, actor)], action=action, reason=_clean_reason(reason)
    )


@transaction.atomic
def fact_reject(
    *,
    subject_id: str,
    key: str,
    actor: Actor,
    reason: str = "",
    expected_version: int | None = None,
) -> None:
    """A reviewer refuses a held fact: it is erased, and the history keeps only the decision."""
    fact = _load_for_update(subject_id, key, expected_version)
    if fact.status != FactStatus.PENDING_REVIEW:
        raise FactStateError("Only facts waiting for review can be rejected.")
    _remove(fact, action=EventAction.REJECTED, actor=actor, reason=reason)


@transaction.atomic
def fact_delete(
    *,
    subject_id: str,
    key: str,
    actor: Actor,
    reason: str = "",
    expected_version: int | None = None,
) -> bool:
    """Erase one fact. True when something was deleted (the upstream delete_fact contract).

    Without `expected_version` the fact is not read first: after the traveller's lock, one
    statement deletes it (if there) and erases its history and copies."""
    if expected_version is not None:
        try:
            fact = _load_for_update(subject_id, key, expected_version)
        except FactNotFound:
            return False
        _remove(fact, action=EventAction.DELETED, actor=actor, reason=reason)
        return True
    clean_subject_id(subject_id)
    _lock_subject(subject_id)
    return bool(erasure.erase_facts(
        [(subject_id, normalize_key(key), actor)],
        action=EventAction.DELETED,
        reason=_clean_reason(reason),
    ))


_SQL_LOCK_SUBJECT_ONLY = 'SELECT 1 FROM "memory_subject" WHERE subject_id = %s FOR UPDATE'


async def fact_delete_async(*, conn: Any, subject_id: str, key: str, actor: Actor,
                            reason: str = "") -> bool:
    """`fact_delete` on an async psycopg connection, in one transaction of its own, for
    DjangoMemoryStore's native path: the traveller's lock and the erasing statement sent
    together (pipeline mode, one round trip). PostgreSQL only; the caller checked
    `erasure.native_ready()`. A traveller never stored has nothing to delete (no row is made)."""
    clean_subject_id(subject_id)
    rows = [(subject_id, normalize_key(key), actor)]
    erasing = conn.cursor()
    if not conn.autocommit:  # not the store's pool: an explicit transaction (more round trips)
        async with conn.transaction():
            await conn.cursor().execute(_SQL_LOCK_SUBJECT_ONLY, [subject_id])
            await erasure.erase_facts_async(
                erasing, rows, action=EventAction.DELETED, reason=_clean_reason(reason)
            )
        return bool(await erasing.fetchall())
    # One round trip: in pipeline mode on an autocommit connection, the statements up to the
    # Sync form one implicit transaction, committed at the Sync (or rolled back whole on an
    # error). The lock runs first; the erasing statement then takes its own snapshot, so it
    # sees every event that a writer who held the lock before us committed.
    # A generic plan: psycopg prepares the statement after a few calls, but PostgreSQL would go
    # on planning each call afresh (its custom plans look cheaper), which costs more than the
    # erasure itself (measured: p50 7-8 ms against 4 ms, on a loaded machine).
    async with conn.pipeline():
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        await conn.cursor().execute(_SQL_LOCK_SUBJECT_ONLY, [subject_id])
        await erasure.erase_facts_async(
            erasing, rows, action=EventAction.DELETED, reason=_clean_reason(reason)
        )
        await conn.execute("RESET plan_cache_mode")
    return bool(await erasing.fetchall())


def _clear(subject_id: str, *, actor: Actor, reason: str, receipt: str = "") -> FactEvent:
    clean_subject_id(subject_id)
    subject = _lock_subject(subject_id)
    deleted = erasure.erase_subject(subject_id)
    subject.purge_generation += 1
    subject.save(update_fields=["purge_generation", "updated_at"])
    after: dict[str, Any] = {"facts_deleted": deleted, "purge_generation": subject.purge_generation}
    if receipt:
        after["receipt"] = receipt
    return _record(
        subject_id=subject_id,
        key="",
        action=EventAction.SUBJECT_CLEARED,
        actor=actor,
        reason=reason,
        after=after,
        receipt=receipt,
    )


@transaction.atomic
def subject_clear(*, subject_id: str, actor: Actor, reason: str = "") -> int:
    """Forget everything about a traveller and bump the purge generation (even when there was
    nothing), so that an extraction already in flight discards its batch. Returns the new
    generation."""
    event = _clear(subject_id, actor=actor, reason=reason)
    return event.after["purge_generation"]


# No 0/O, 1/I/L: the number is read aloud to support staff over the phone.
_RECEIPT_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"


def new_receipt_number() -> str:
    raw = "".join(secrets.choice(_RECEIPT_ALPHABET) for _ in range(12))
    return f"R-{raw[:4]}-{raw[4:8]}-{raw[8:]}"


@transaction.atomic
def subject_forget(*, subject_id: str, actor: Actor, reason: str = "") -> ClearReceipt:
    """`subject_clear` with a receipt: its number, time and count live in the subject_cleared
    event itself, so the receipt is part of the audit trail and staff can find it by number."""
    event = _clear(subject_id, actor=actor, reason=reason, receipt=new_receipt_number())
    return receipt_from_event(event)


@transaction.atomic
def subject_set_preferences(
    *,
    subject_id: str,
    actor: Actor,
    memory_paused: bool | None = None,
    memory_use_paused: bool | None = None,
    reason: str = "",
) -> Subject:
    """The traveller's switches: stop learning new facts, and/or stop the agent using them."""
    clean_subject_id(subject_id)
    subject = _lock_subject(subject_id)
    before = {
        "memory_paused": subject.memory_paused,
        "memory_use_paused": subject.memory_use_paused,
    }
    if memory_paused is not None:
        subject.memory_paused = memory_paused
    if memory_use_paused is not None:
        subject.memory_use_paused = memory_use_paused
    after = {"memory_paused": subject.memory_paused, "memory_use_paused": subject.memory_use_paused}
    if after == before:
        return subject
    subject.save(update_fields=["memory_paused", "memory_use_paused", "updated_at"])
    _record(
        subject_id=subject_id,
        key="",
        action=EventAction.PREFERENCES_CHANGED,
        actor=actor,
        reason=reason,
        before=before,
        after=after,
    )
    return subject


# --- bulk import ------------------------------------------------------------------------------

IMPORT_CHUNK_SIZE = 5000


@dataclass(frozen=True)
class ImportDraft:
    """A fact from a memory file: its own time and session tag are kept (a live write stamps
    the server's). `position` locates it in the file for reports."""

    subject_id: Any
    key: Any
    value: Any
    category: Any = None
    updated_at: datetime | None = None
    session_tag: str = ""
    position: int = 0


@dataclass
class ImportResult:
    """Counts, and where refused facts were (subject and key, or position): never a value."""

    read: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    kept_newer: int = 0
    sent_to_review: int = 0
    skipped_paused: int = 0
    invalid: list[tuple[str, str]] = field(default_factory=list)
    blocked: list[tuple[str, str]] = field(default_factory=list)

    def add(self, other: ImportResult) -> None:
        for name in ("read", "created", "updated", "unchanged", "kept_newer", "sent_to_review",
                     "skipped_paused"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.invalid.extend(other.invalid)
        self.blocked.extend(other.blocked)


def _where(draft: ImportDraft, key: str = "") -> tuple[str, str]:
    """Subject and key of a refused fact, for the report; the position when they are unusable."""
    subject = draft.subject_id if isinstance(draft.subject_id, str) else ""
    subject = sanitize_text(subject)[:SUBJECT_ID_MAX_LENGTH] or f"(entry {draft.position})"
    return subject, key or (normalize_key(draft.key) if isinstance(draft.key, str) else "") or (
        f"(entry {draft.position})"
    )


def facts_import(
    *,
    facts: Iterable[ImportDraft],
    actor: Actor,
    reason: str = "",
    chunk_size: int = IMPORT_CHUNK_SIZE,
    progress: Any = None,
) -> ImportResult:
    """Move an existing memory in: every fact validated and filtered like a live write, written
    in set-based chunks (a handful of statements per chunk, whatever its size), one FactEvent
    per created or changed fact, origin `import` for a system actor.

    Idempotent: a fact already held with the same value and category is left alone (no event),
    and one held with a newer `updated_at` than the file's is kept. Each chunk is one
    transaction, so an interrupted import is finished by running it again. Facts touching
    sensitive topics are held for review, as the agent's are. Travellers who paused learning
    get nothing imported. `progress(done)` is called after each chunk."""
    settings_row = memory_settings()
    write_filter = MemoryWriteFilter(settings_row.blocked_patterns)
    rules = _retention_rules()
    total = ImportResult()
    chunk: list[ImportDraft] = []
    for draft in facts:
        chunk.append(draft)
        if len(chunk) >= chunk_size:
            total.add(_import_chunk(chunk, actor, reason, write_filter, rules))
            chunk = []
            if progress is not None:
                progress(total.read)
    if chunk:
        total.add(_import_chunk(chunk, actor, reason, write_filter, rules))
        if progress is not None:
            progress(total.read)
    return total


def _clean_drafts(
    chunk: Sequence[ImportDraft], write_filter: MemoryWriteFilter, result: ImportResult
) -> dict[tuple[str, str], tuple[CleanFact, ImportDraft]]:
    """Validated and filtered facts by (subject, key); the same pair twice: the last wins."""
    cleaned: dict[tuple[str, str], tuple[CleanFact, ImportDraft]] = {}
    for draft in chunk:
        try:
            subject_id = clean_subject_id(draft.subject_id)
            clean = validate_fact(draft.key, draft.value, draft.category)
        except FactInvalid:
            result.invalid.append(_where(draft))
            continue
        raw_key = sanitize_text(draft.key) if isinstance(draft.key, str) else ""
        if not write_filter.check(clean.key, clean.value, raw_key=raw_key).allowed:
            result.blocked.append(_where(draft, clean.key))
            continue
        cleaned.pop((subject_id, clean.key), None)  # re-insert: file order of the last one
        cleaned[(subject_id, clean.key)] = (clean, draft)
    return cleaned


@transaction.atomic
def _import_chunk(
    chunk: Sequence[ImportDraft],
    actor: Actor,
    reason: str,
    write_filter: MemoryWriteFilter,
    rules: Sequence[RetentionRule],
) -> ImportResult:
    result = ImportResult(read=len(chunk))
    cleaned = _clean_drafts(chunk, write_filter, result)
    if not cleaned:
        return result
    subject_ids = sorted({subject_id for subject_id, _ in cleaned})
    Subject.objects.bulk_create(
        [Subject(subject_id=subject_id) for subject_id in subject_ids], ignore_conflicts=True
    )
    # Lock every traveller of the chunk, in a fixed order (no deadlock with another import),
    # so live writes to them wait; the same query says who paused learning.
    locked = (
        Subject.objects.select_for_update()
        .filter(subject_id__in=subject_ids)
        .order_by("subject_id")
        .values_list("subject_id", "memory_paused")
    )
    paused = {subject_id for subject_id, is_paused in locked if is_paused}
    existing = {
        (fact.subject_id, fact.key): fact
        for fact in MemoryFact.objects.filter(
            subject_id__in=subject_ids, key__in={key for _, key in cleaned}
        )
    }
    now = timezone.now()
    reason = _clean_reason(reason)
    new_rows: list[Any] = []
    changed: list[tuple[MemoryFact, dict[str, Any]]] = []
    sessions: dict[tuple[str, str], str] = {}
    for (subject_id, key), (clean, draft) in cleaned.items():
        if subject_id in paused:
            result.skipped_paused += 1
            continue
        when = min(draft.updated_at or now, now)
        sessions[(subject_id, key)] = draft.session_tag
        fact = existing.get((subject_id, key))
        same = fact is not None and (
            normalize_value(fact.value) == normalize_value(clean.value)
            and fact.category == clean.category
        )
        topic = None if same else classify_sensitive(clean.key, clean.value)
        if fact is None:
            fact = _plain_row(  # no model instance: a third of the import's time at 10^5 facts
                MemoryFact,
                subject_id=subject_id, key=key, value=clean.value, category=clean.category,
                created_at=now, updated_at=when, origin=actor.origin,
                source_session_id=draft.session_tag, sensitive=topic is not None,
                status=FactStatus.PENDING_REVIEW if topic else FactStatus.ACTIVE, version=1,
                expiry_pinned=False,
            )
            _apply_retention(fact, rules)
            new_rows.append(fact)
            result.created += 1
        elif same:
            result.unchanged += 1
            continue
        elif fact.updated_at > when:
            result.kept_newer += 1
            continue
        else:
            before = _snapshot(fact)
            fact.value, fact.category, fact.updated_at = clean.value, clean.category, when
            fact.source_session_id = draft.session_tag or fact.source_session_id
            if topic:
                fact.sensitive, fact.status = True, FactStatus.PENDING_REVIEW
            fact.version += 1
            _apply_retention(fact, rules)
            changed.append((fact, before))
            result.updated += 1
        if fact.status == FactStatus.PENDING_REVIEW and topic:
            result.sent_to_review += 1
    _copy_in(MemoryFact, new_rows)
    MemoryFact.objects.bulk_update(
        [fact for fact, _ in changed],
        ["value", "category", "updated_at", "source_session_id", "sensitive", "status",
         "version", "expires_at"],
        batch_size=1000,
    )
    event = {
        "actor_kind": actor.kind, "actor_user_id": getattr(actor.user, "pk", None),
        "actor_label": actor.label[:200], "reason": reason,
    }
    _copy_in(
        FactEvent,
        [
            _plain_row(FactEvent, subject_id=fact.subject_id, key=fact.key,
                       key_hash=event_key_hash(fact.subject_id, fact.key),
                       action=EventAction.CREATED, after=_snapshot(fact),
                       session_tag=fact.source_session_id, **event)
            for fact in new_rows
        ]
        + [
            _plain_row(FactEvent, subject_id=fact.subject_id, key=fact.key,
                       key_hash=event_key_hash(fact.subject_id, fact.key),
                       action=EventAction.UPDATED,
                      before=before, after=_snapshot(fact),
                      session_tag=sessions[(fact.subject_id, fact.key)], **event)
            for fact, before in changed
        ],
    )
    return result


_ROW_DEFAULTS: dict[type[models.Model], dict[str, Any]] = {}


def _plain_row(model: type[models.Model], **values: Any) -> SimpleNamespace:
    """A new row as plain attributes (every column, defaults filled in) for _copy_in: building
    10^5 model instances costs more than everything else the import does."""
    defaults = _ROW_DEFAULTS.get(model)
    if defaults is None:
        defaults = {
            field.attname: field.get_default() if field.has_default() else None
            for field in model._meta.concrete_fields
            if not field.primary_key
        }
        _ROW_DEFAULTS[model] = defaults
    return SimpleNamespace(**{**defaults, **values})


def _copy_in(model: type[models.Model], rows: Sequence[Any]) -> None:
    """Insert many new rows in one statement: COPY on PostgreSQL (several times faster than
    multi-row INSERTs for an import of 10^5 facts), bulk_create elsewhere (SQLite)."""
    if not rows:
        return
    if not is_postgresql():
        model.objects.bulk_create([model(**vars(row)) for row in rows], batch_size=500)
        return
    from psycopg.types.json import Jsonb

    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    table = connection.ops.quote_name(model._meta.db_table)
    now = timezone.now()
    # Plain values, not get_db_prep_save (a third of the import's time): psycopg adapts str,
    # int, bool and aware datetimes itself; JSON needs its wrapper, auto_now_add its time.
    json_at = {i for i, field in enumerate(fields) if isinstance(field, models.JSONField)}
    stamped = {i for i, field in enumerate(fields) if getattr(field, "auto_now_add", False)}
    names = [field.attname for field in fields]
    with connection.cursor() as cursor, cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            values = [getattr(row, name) for name in names]
            for i in json_at:
                if values[i] is not None:
                    values[i] = Jsonb(values[i])
            for i in stamped:
                values[i] = values[i] or now
            copy.write_row(values)


@transaction.atomic
def subject_set_legal_hold(*, subject_id: str, hold: bool, actor: Actor, reason: str) -> Subject:
    """Place or lift a legal hold: retention sweeps and rule changes leave a held traveller's
    facts alone. Lifting it brings their expiry dates back in line with today's rules."""
    clean_subject_id(subject_id)
    if not _clean_reason(reason):
        raise FactInvalid("Give a reason.", fields={"reason": "Say why, e.g. the case number."})
    subject = _lock_subject(subject_id)
    if subject.legal_hold == hold:
        return subject
    subject.legal_hold = hold
    subject.save(update_fields=["legal_hold", "updated_at"])
    if not hold:
        MemoryFact.objects.filter(subject_id=subject_id, expiry_pinned=False).update(
            expires_at=retention.expiry_expression(retention.enabled_rules())
        )
    _record(
        subject_id=subject_id,
        key="",
        action=EventAction.LEGAL_HOLD_PLACED if hold else EventAction.LEGAL_HOLD_LIFTED,
        actor=actor,
        reason=reason,
        before={"legal_hold": not hold},
        after={"legal_hold": hold},
    )
    return subject


# --- retention: sweeps and recomputation (each call is one chunk, one transaction) -------------

PINNED_EXPIRY_ACTOR = Actor(ActorKind.RETENTION, "rule:expiry date set by a person")


@dataclass(frozen=True)
class ChunkResult:
    done: int
    more: bool


@transaction.atomic
def facts_sweep_expired(*, limit: int = 1000, now: datetime | None = None) -> ChunkResult:
    """Erase up to `limit` expired facts of travellers without a legal hold, through the one
    erasure path, each with the rule that expired it as actor. Rows are taken with
    FOR UPDATE SKIP LOCKED, so sweeps running at once never erase the same fact twice."""
    now = now or timezone.now()
    rows = list(
        MemoryFact.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(expires_at__lte=now, subject__legal_hold=False)
        .order_by()
        .values_list("subject_id", "key", "category", "sensitive", "expiry_pinned")[:limit]
    )
    if not rows:
        return ChunkResult(done=0, more=False)
    rules = retention.enabled_rules()
    actors: dict[tuple[str, str, bool], Actor] = {}  # a chunk repeats the same topics
    doomed = []
    for subject_id, key, category, sensitive, pinned in rows:
        actor = PINNED_EXPIRY_ACTOR
        if not pinned:
            topic = (key, category, sensitive)
            if topic not in actors:
                rule = matching_rule(rules, key=key, category=category, sensitive=sensitive)
                actors[topic] = PINNED_EXPIRY_ACTOR if rule is None else Actor.retention(rule)
            actor = actors[topic]
        doomed.append((subject_id, key, actor))
    erased = erasure.erase_facts(
        doomed, action=EventAction.DELETED, reason="Expired under the retention policy."
    )
    return ChunkResult(done=erased, more=len(rows) == limit)


@transaction.atomic
def events_sweep_old(*, limit: int = 1000, now: datetime | None = None) -> ChunkResult:
    """Delete history older than the audit retention (memory settings). The history of a
    traveller under legal hold is kept: a hold preserves the record."""
    now = now or timezone.now()
    row = MemorySettings.objects.filter(pk=1).first() or MemorySettings()  # uncached: a policy
    cutoff = now - timedelta(days=row.audit_retention_days)
    ids = list(
        FactEvent.objects.select_for_update(skip_locked=True)
        .filter(created_at__lt=cutoff)
        .exclude(subject_id__in=Subject.objects.filter(legal_hold=True).values("subject_id"))
        .order_by()
        .values_list("pk", flat=True)[:limit]
    )
    if not ids:
        return ChunkResult(done=0, more=False)
    deleted, _ = FactEvent.objects.filter(pk__in=ids).delete()
    return ChunkResult(done=deleted, more=len(ids) == limit)


@transaction.atomic
def retention_recompute_chunk(*, run_id: int, limit: int = 1000) -> RetentionRun:
    """Give the next `limit` governed facts (by primary key) the expiry today's rules give them.
    A newer run makes this one stop: it will cover every fact with the newer rules anyway."""
    run = RetentionRun.objects.select_for_update().get(pk=run_id)
    if run.is_finished:
        return run
    if RetentionRun.objects.filter(pk__gt=run.pk).exists():
        run.status = RunStatus.SUPERSEDED
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "finished_at"])
        return run
    ids = list(
        retention.governed_facts()
        .filter(pk__gt=run.last_pk)
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )
    if ids:
        MemoryFact.objects.filter(pk__in=ids).update(
            expires_at=retention.expiry_expression(retention.enabled_rules())
        )
        run.done += len(ids)
        run.last_pk = ids[-1]
        run.status = RunStatus.RUNNING
    if len(ids) < limit:
        run.status = RunStatus.DONE
        run.total = max(run.total, run.done)
        run.finished_at = timezone.now()
    run.save(update_fields=["done", "last_pk", "status", "total", "finished_at"])
    return run


# --- staff dashboard ----------------------------------------------------------------------------


@transaction.atomic
def fact_reveal(*, subject_id: str, key: str, actor: Actor, reason: str) -> MemoryFact:
    """A person looks at a sensitive value: an access event with the reason, and no value in it
    (the history must not become a second copy of what was masked)."""
    if not _clean_reason(reason).strip():
        raise FactInvalid("Say why you need to see this value.", fields={"reason": "Required."})
    fact = _load_for_update(subject_id, key, None)
    _record(
        subject_id=fact.subject_id,
        key=fact.key,
        action=EventAction.VALUE_REVEALED,
        actor=actor,
        reason=reason,
    )
    return fact


BULK_ACTIONS = ("expire", "flag_sensitive", "delete")


@transaction.atomic
def facts_bulk_apply(
    *, subject_id: str, keys: Sequence[str], action: str, actor: Actor, reason: str
) -> int:
    """Expire, flag or delete several facts of one traveller at once: all or nothing, one event
    per fact (each with the same reason). Returns how many facts were changed."""
    if action not in BULK_ACTIONS:
        raise FactInvalid("Unknown bulk action.", fields={"action": "Choose an action."})
    if not keys:
        raise FactInvalid("Select at least one fact.", fields={"keys": "Select a fact."})
    done = 0
    for key in dict.fromkeys(keys):
        if action == "expire":
            fact_expire(subject_id=subject_id, key=key, actor=actor, reason=reason)
        elif action == "flag_sensitive":
            fact_flag_sensitive(subject_id=subject_id, key=key, actor=actor, reason=reason)
        elif not fact_delete(subject_id=subject_id, key=key, actor=actor, reason=reason):
            raise FactNotFound("A selected fact no longer exists; nothing was changed.")
        done += 1
    return done
