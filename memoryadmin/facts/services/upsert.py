"""The agent's upsert: validate and filter, lock and read, plan (`plan.py`), write (`commit.py`)
in a fixed number of statements, on Django's connection (`fact_upsert`) or on an async psycopg
one (`fact_upsert_async`, DjangoMemoryStore's native path)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from psycopg.pq import TransactionStatus

from memoryadmin import db
from memoryadmin.db import hot_cursor, in_own_pipelined_transaction, pipelined
from memoryadmin_client.types import SESSION_ID_MAX_LENGTH

from ..actors import Actor
from ..counting import actor_label, count_blocked
from ..errors import (
    FactBlocked,
    FactInvalid,
    FactLearningPaused,
    FactMemoryDisabled,
)
from ..selectors import (
    MemoryConfig,
    facts_for_agent,
    memory_config,
)
from ..sql import (
    SQL_EXISTING,
    SQL_LOCK_SUBJECT,
    SQL_NEW_SUBJECT,
)
from ..validation import (
    CleanFact,
    MemoryWriteFilter,
    clean_evidence,
    clean_subject_id,
    sanitize_text,
    validate_fact,
)
from .commit import plan_commit, plan_statements
from .plan import (
    ABSENT,
    FACT_COLUMNS,
    Batch,
    FactDraft,
    FactState,
    UpsertResult,
    upsert_plan,
)

__all__ = ["ABSENT", "FactDraft", "FactState", "UpsertResult", "fact_upsert", "fact_upsert_async"]


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
    existing = {r[1]: dict(zip(FACT_COLUMNS, r, strict=True)) for r in found}
    return bool(row[0]), bool(row[1]), existing


@lru_cache(maxsize=16)
def _cached_filter(patterns: tuple[str, ...]) -> MemoryWriteFilter:
    return MemoryWriteFilter(patterns)


def _write_filter(patterns: Any) -> MemoryWriteFilter:
    """The filter for the settings' patterns, built once per set of them (building checks and
    compiles each pattern): the upsert is the agent's hot path."""
    if isinstance(patterns, list) and all(isinstance(source, str) for source in patterns):
        return _cached_filter(tuple(patterns))
    return MemoryWriteFilter(patterns)  # not a list of text: refused by the filter, as ever


def _upsert_clean(
    *,
    subject_id: str,
    facts: Sequence[FactDraft],
    actor: Actor,
    session_tag: str,
    config: MemoryConfig,
) -> Batch:
    """Validate and filter a batch before anything is read or written."""
    clean_subject_id(subject_id)
    if len(session_tag) > SESSION_ID_MAX_LENGTH:
        raise FactInvalid("Session tag too long.", fields={"session_id": "Too long."})
    cleaned = Batch()
    cleaned.rank = {}
    errors: dict[str, str] = {}
    if actor.is_automated and not config.settings.memory_enabled:
        raise FactMemoryDisabled("Memory is not enabled; nothing is saved.")
    write_filter = _write_filter(config.settings.blocked_patterns)
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


def _upsert_check_paused(actor: Actor, memory_paused: bool) -> None:
    if actor.is_automated and memory_paused:
        raise FactLearningPaused("The traveller has paused memory; nothing new is saved.")


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
        plan = upsert_plan(
            cleaned=cleaned,
            existing=existing,
            use_paused=use_paused,
            actor=actor,
            session_tag=session_tag,
            expected_versions=expected_versions,
            config=config,
            now=now,
        )
        who = {"subject_id": subject_id, "actor": actor, "reason": reason}
        plan_commit(plan, **who, session_tag=session_tag, now=now)  # at most three statements
        if agent_view:
            plan.result.agent_facts = facts_for_agent(subject_id)
        if before_commit is not None:
            before_commit(plan.result)
        return plan.result

    if not connection.in_atomic_block and connection.get_autocommit():
        result = in_own_pipelined_transaction(upsert)
        db.written(subject_id)  # committed: its position for read-your-writes
        return result
    # The transaction outside the pipeline: entering it costs no round trip, and the pipeline's
    # closing sync (the writes' errors) still happens inside it.
    with transaction.atomic(savepoint=savepoint), pipelined():
        result = upsert()
    db.written(subject_id)  # recorded when the caller's transaction commits
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
            plan = upsert_plan(
                cleaned=cleaned,
                existing={r[1]: dict(zip(FACT_COLUMNS, r, strict=True)) for r in found},
                use_paused=bool(row[1]),
                actor=actor,
                session_tag=session_tag,
                expected_versions=None,
                config=config,
                now=now,
            )
            for sql, params in plan_statements(
                plan,
                subject_id=subject_id,
                actor=actor,
                reason=reason,
                session_tag=session_tag,
                now=now,
            ):
                await lock.execute(sql, params)
            await lock.execute("COMMIT")
    except BaseException:
        if not conn.broken and conn.info.transaction_status != TransactionStatus.IDLE:
            await conn.rollback()
        raise
    return plan.result
