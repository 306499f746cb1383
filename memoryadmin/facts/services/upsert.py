"""The upsert: validate, lock and read, plan in Python, write in a fixed number of statements
(Django's connection, or an async psycopg one for DjangoMemoryStore)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from psycopg.pq import TransactionStatus

from memoryadmin.db import replicas
from memoryadmin.db.cursors import hot_cursor, in_own_pipelined_transaction, pipelined
from memoryadmin_client.types import SESSION_ID_MAX_LENGTH

from ..actors import Actor
from ..counting import actor_label, count_blocked
from ..errors import (
    FactBlocked,
    FactConflict,
    FactInvalid,
    FactLearningPaused,
    FactMemoryDisabled,
)
from ..keyhash import event_key_hash
from ..models import (
    ActorKind,
    EventAction,
    FactStatus,
)
from ..selectors import (
    AgentFact,
    MemoryConfig,
    facts_for_agent,
    memory_config,
)
from ..sql import (
    SQL_EXISTING,
    SQL_INSERT_EVENTS,
    SQL_INSERT_FACTS,
    SQL_LOCK_SUBJECT,
    SQL_NEW_SUBJECT,
    SQL_UPDATE_FACTS,
)
from ..validation import (
    CleanFact,
    MemoryWriteFilter,
    classify_sensitive,
    clean_evidence,
    clean_reason,
    clean_subject_id,
    normalize_key,
    sanitize_text,
    validate_fact,
)
from .history import (
    is_unchanged,
    row_expiry,
    snapshot,
)

# The expected version of a fact that must not exist yet (versions start at 1).
ABSENT = 0


@dataclass(frozen=True)
class FactDraft:
    """A candidate fact as a caller hands it in; validate_fact cleans it."""

    key: Any
    value: Any
    category: Any = None
    # The traveller's words behind it, already checked against the turn by the caller when it
    # could be (extraction); the upsert still bounds it and runs it through the write filter,
    # and drops it (never the fact) when it fails.
    evidence: Any = ""


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


# The rows of SQL_EXISTING come as tuples in this order (no cursor.description to build).
_FACT_COLUMN_NAMES = (
    "id",
    "key",
    "value",
    "category",
    "status",
    "sensitive",
    "expires_at",
    "expiry_pinned",
    "version",
    "source_session_id",
    "created_at",
    "updated_at",
    "evidence",
    "evidence_origin",
)
_INSERT_COLUMNS = (
    "key",
    "value",
    "category",
    "status",
    "sensitive",
    "expires_at",
    "updated_at",
    "evidence",
    "evidence_origin",
)
_UPDATE_COLUMNS = (
    "id",
    "value",
    "category",
    "source_session_id",
    "status",
    "sensitive",
    "expires_at",
    "expiry_pinned",
    "version",
    "updated_at",
    "evidence",
    "evidence_origin",
    "rewritten_by",
    "rewritten_by_label",
)
_STEP = timedelta(microseconds=1)


class _Batch(dict[str, CleanFact]):
    """A batch's clean facts by key, in the order first named (a new fact's place); `rank` is
    where each key was last named, which orders their stamps: a later fact is the newer one."""

    rank: dict[str, int]


def _json_rows(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> str:
    return json.dumps(
        [{name: row[name] for name in columns} for row in rows],
        default=lambda value: value.isoformat(),  # the datetimes (expires_at)
    )


def _json_events(subject_id: str, events: list[tuple[str, str, str | None, str]]) -> str:
    """The events' document; their snapshots are already JSON text, spliced in as they are."""
    parts = []
    for key, action, before, after in events:
        head = json.dumps(
            {"key": key, "key_hash": event_key_hash(subject_id, key), "action": str(action)}
        )
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
    with hot_cursor() as lock, hot_cursor() as read:
        lock.execute(SQL_LOCK_SUBJECT, [subject_id])
        read.execute(SQL_EXISTING, [subject_id, keys])
        row = lock.fetchone()
        found = read.fetchall()
        if row is None:
            # A new traveller. ON CONFLICT DO NOTHING waits for a concurrent creator instead of
            # failing; the facts are read again once the lock is ours.
            lock.execute(SQL_NEW_SUBJECT, [subject_id, now, now])
            lock.execute(SQL_LOCK_SUBJECT, [subject_id])
            read.execute(SQL_EXISTING, [subject_id, keys])
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
    """At most three statements."""
    with hot_cursor() as cursor:
        for sql, params in _upsert_statements(
            subject_id=subject_id,
            actor=actor,
            reason=reason,
            session_tag=session_tag,
            now=now,
            inserts=inserts,
            updates=updates,
            events=events,
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
        statements.append(
            (
                SQL_INSERT_FACTS,
                [
                    subject_id,
                    session_tag,
                    now,
                    str(actor.origin),
                    _json_rows(inserts, _INSERT_COLUMNS),
                ],
            )
        )
    if updates:
        statements.append((SQL_UPDATE_FACTS, [_json_rows(updates, _UPDATE_COLUMNS), subject_id]))
    if events:
        statements.append(
            (
                SQL_INSERT_EVENTS,
                [
                    subject_id,
                    str(actor.kind),
                    actor.user.pk if actor.user is not None else None,
                    actor.label[:200],
                    clean_reason(reason),
                    session_tag,
                    now,
                    _json_events(subject_id, events),
                ],
            )
        )
    return statements


def _upsert_clean(
    *,
    subject_id: str,
    facts: Sequence[FactDraft],
    actor: Actor,
    session_tag: str,
    config: MemoryConfig,
) -> _Batch:
    """Validate and filter a batch before anything is read or written."""
    clean_subject_id(subject_id)
    if len(session_tag) > SESSION_ID_MAX_LENGTH:
        raise FactInvalid("Session tag too long.", fields={"session_id": "Too long."})
    cleaned = _Batch()
    cleaned.rank = {}
    errors: dict[str, str] = {}
    if actor.is_automated and not config.settings.memory_enabled:
        raise FactMemoryDisabled("Memory is not enabled; nothing is saved.")
    write_filter = MemoryWriteFilter(config.settings.blocked_patterns)
    for index, draft in enumerate(facts):
        try:
            clean = validate_fact(draft.key, draft.value, draft.category)
            # The raw key too: normalizing turns "a@b.com" into "a_b_com", which no pattern sees.
            write_filter.enforce(clean.key, clean.value, raw_key=sanitize_text(draft.key))
            if draft.evidence:
                evidence = clean_evidence(draft.evidence, write_filter=write_filter)
                clean = CleanFact(clean.key, clean.value, clean.category, evidence)
        except FactInvalid as exc:
            errors.update({f"facts[{index}].{name}": msg for name, msg in exc.fields.items()})
            continue
        except FactBlocked as exc:  # name the position, never the value
            count_blocked(actor_label(actor))
            exc.fields = {f"facts[{index}].{name}": msg for name, msg in exc.fields.items()}
            raise
        cleaned[clean.key] = clean  # a repeated key in one batch: the last one wins
        cleaned.rank[clean.key] = index
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
        if version == ABSENT and current is None:
            continue  # an add: the key must not be held yet (checked under the lock)
        if current is None or current["version"] != version:
            raise FactConflict(
                "The fact was changed since it was read; fetch it again and retry.",
                current_version=current["version"] if current else None,
            )
    result = UpsertResult()
    rules = config.rules
    visible_to_agent = config.settings.memory_enabled and not use_paused
    plan = _UpsertPlan(result=result, inserts=[], updates=[], events=[])
    rank = getattr(cleaned, "rank", {})
    for position, (key, clean) in enumerate(cleaned.items()):
        stamp = now + _STEP * rank.get(key, position)
        # Staff facts go through the same classifier: masked and under the sensitive-facts rule,
        # but not held for review (a person wrote them, after the form's warning).
        topic = (
            classify_sensitive(clean.key, clean.value)
            if actor.is_automated or actor.kind == ActorKind.STAFF
            else None
        )
        held = topic is not None and actor.is_automated
        row = existing.get(key)
        if row is None:
            row = {
                "key": key,
                "value": clean.value,
                "category": str(clean.category),
                "status": FactStatus.PENDING_REVIEW if held else FactStatus.ACTIVE,
                "sensitive": topic is not None,
                "expiry_pinned": False,
                "expires_at": None,
                "version": 1,
                "source_session_id": session_tag,
                "updated_at": stamp,
                "evidence": clean.evidence,
                "evidence_origin": str(actor.origin),
            }
            row["expires_at"] = row_expiry(row, rules)
            plan.inserts.append(row)
            plan.events.append((key, EventAction.CREATED, None, json.dumps(snapshot(row))))
            result.created.append(key)
        else:
            row = dict(row)
            if is_unchanged(row, clean, now):
                result.unchanged.append(key)
                result.states[key] = _state(row, visible_to_agent, now)
                continue
            before = json.dumps(snapshot(row))
            row.update(
                value=clean.value,
                category=str(clean.category),
                updated_at=stamp,
                source_session_id=session_tag or row["source_session_id"],
                version=row["version"] + 1,
                # A replaced fact reads the new words, or none: never the old version's quote.
                evidence=clean.evidence,
                evidence_origin=str(actor.origin),
            )
            # A person's new words say who wrote them; the agent's or extraction's clear that.
            row["rewritten_by"], row["rewritten_by_label"] = actor.rewriter
            if row["expiry_pinned"] and row["expires_at"] is not None and row["expires_at"] <= now:
                row["expiry_pinned"] = False  # restating an expired fact revives it
            if topic:
                row["sensitive"] = True
            if held:
                row["status"] = FactStatus.PENDING_REVIEW
            row["expires_at"] = row_expiry(row, rules)
            plan.updates.append(row)
            plan.events.append((key, EventAction.UPDATED, before, json.dumps(snapshot(row))))
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
    `ABSENT` (0) as the version means "not held yet": an add that a concurrent add of the same
    key turns into a FactConflict instead of an overwrite.

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
            subject_id=subject_id,
            actor=actor,
            reason=reason,
            session_tag=session_tag,
            now=now,
            inserts=plan.inserts,
            updates=plan.updates,
            events=plan.events,
        )
        if agent_view:
            plan.result.agent_facts = facts_for_agent(subject_id)
        if before_commit is not None:
            before_commit(plan.result)
        return plan.result

    if not connection.in_atomic_block and connection.get_autocommit():
        result = in_own_pipelined_transaction(upsert)
        replicas.written(subject_id)  # committed: its position for read-your-writes
        return result
    # The transaction outside the pipeline: entering it costs no round trip, and the pipeline's
    # closing sync (the writes' errors) still happens inside it.
    with transaction.atomic(savepoint=savepoint), pipelined():
        result = upsert()
    replicas.written(subject_id)  # recorded when the caller's transaction commits
    return result


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
            await lock.execute(SQL_LOCK_SUBJECT, [subject_id])
            await read.execute(SQL_EXISTING, [subject_id, keys])
            row = await lock.fetchone()
            found = await read.fetchall()
            if row is None:  # a new traveller: create, lock, and read again once locked
                await lock.execute(SQL_NEW_SUBJECT, [subject_id, now, now])
                await lock.execute(SQL_LOCK_SUBJECT, [subject_id])
                await read.execute(SQL_EXISTING, [subject_id, keys])
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
                subject_id=subject_id,
                actor=actor,
                reason=reason,
                session_tag=session_tag,
                now=now,
                inserts=plan.inserts,
                updates=plan.updates,
                events=plan.events,
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
