"""Connection plumbing for the hot path: the prepared cursor the agent's fixed statements run
on, and psycopg's pipeline mode on Django's connection. Kept apart from the reads and writes
that use it, so that each of those reads as SQL and rules only."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg import sql
from psycopg.errors import UndefinedFunction
from psycopg.pq import TransactionStatus

from memoryadmin.db import functions
from memoryadmin.db.fastpaths import django_cursor
from memoryadmin.db.functions import LockedWrite
from memoryadmin.db.sql import (
    SQL_GENERIC_PLANS_BACK,
    SQL_GENERIC_PLANS_ON,
    SQL_LOCK_THEN_GENERIC_PLANS,
)


def hot_cursor(using: str = DEFAULT_DB_ALIAS) -> Any:
    """A cursor on Django's connection for the agent's fixed statements: server-side binding and
    a prepared statement per statement text, so PostgreSQL plans each once per connection (the
    plan cost more than running these statements). Django turns prepared statements off by
    default for the sake of transaction-mode poolers; `MEMORY_PREPARED_STATEMENTS=false` does
    the same here (each statement then goes unnamed, still bound on the server, in binary).

    The prepared cursor is a fenced speed trick (`memoryadmin.db.fastpaths.django_cursor`,
    `FASTPATH_DJANGO_CURSOR`): off, or broken by an upgrade, this is Django's own
    `connection.cursor()`. Errors are Django's either way, and a statement refuses to run in a
    broken transaction, as with any Django cursor. `using`: a replica's alias for a read
    (`replicas.read_alias`)."""
    db = connections[using]  # once: each `connection.x` is a thread-local lookup
    cursor = django_cursor.prepared_cursor(db, prepare=settings.MEMORY_PREPARED_STATEMENTS)
    return db.cursor() if cursor is None else cursor


@contextmanager
def pipelined() -> Iterator[None]:
    """psycopg's pipeline mode on Django's connection: statements whose answers are not needed
    yet travel together, so an upsert inside a caller's transaction costs two round trips (lock
    and read; the writes) instead of one per statement. Errors surface at the next fetch or at the
    closing sync. Nests (psycopg counts levels)."""
    db = connections[DEFAULT_DB_ALIAS]
    db.ensure_connection()
    with db.wrap_database_errors, db.connection.pipeline():
        yield


def in_own_pipelined_transaction(work: Callable[[], Any]) -> Any:
    """Run `work` in a transaction of its own on Django's connection, BEGIN and COMMIT sent by
    hand in pipeline mode with its statements: the COMMIT travels with the last writes, as on
    the store's async path. Django's `atomic` commits on its own round trip (a third for an
    upsert). Only where no transaction is open (Django's connection is then in autocommit);
    `work` must not open one (`atomic`) or register `on_commit` callbacks. Any error rolls the
    whole transaction back before it propagates, as `atomic` would."""
    db = connections[DEFAULT_DB_ALIAS]
    db.ensure_connection()
    raw = db.connection
    try:
        with db.wrap_database_errors, raw.pipeline(), db.cursor() as control:
            control.execute("BEGIN")
            result = work()
            control.execute("COMMIT")
    except BaseException:
        if not raw.broken and raw.info.transaction_status != TransactionStatus.IDLE:
            with db.wrap_database_errors:
                raw.rollback()
        raise
    return result


# The statements that ask for generic plans the classic way, around the write (no pooler only).
_SET_GENERIC_PLANS = "SET plan_cache_mode = force_generic_plan"
_RESET_PLANS = "RESET plan_cache_mode"


@functools.lru_cache(maxsize=16)
def lock_then_generic_plans(lock: str) -> str:
    """`lock` inside `SQL_LOCK_THEN_GENERIC_PLANS` (psycopg.sql; cached: a handful of locks)."""
    return sql.SQL(SQL_LOCK_THEN_GENERIC_PLANS).format(lock=sql.SQL(lock.strip())).as_string()


async def locked_write(
    conn: Any, write: LockedWrite, params: dict[str, Any]
) -> list[tuple[Any, ...]]:
    """`write.lock`, then `write.write`, as one transaction on an async psycopg connection,
    committed or rolled back whole. The lock runs first; the write then takes its own snapshot,
    so it sees every row that a writer who held the lock before committed. Returns the write's
    rows. A connection not in autocommit (not the store's pool) gets both statements in a
    transaction of its own (BEGIN and COMMIT: more round trips).

    On the store's pool (autocommit), `DATABASE_LOCKED_FUNCTIONS` (default on): one statement,
    the call of the write's server-side function (`functions`, made by `migrate`), when it
    exists. Otherwise (off, or not made yet) both statements in one round trip, in pipeline
    mode: the statements up to the Sync form the transaction.

    The write runs its generic plan either way: PostgreSQL would otherwise plan each call
    afresh when its custom plans look cheaper, which costs more than an erasure itself. The
    function asks for it in its definition. In the pipeline (the write prepared by psycopg
    after a few calls), `DATABASE_PLAN_IN_LOCK` (default on) asks for it inside the lock
    statement (`SQL_LOCK_THEN_GENERIC_PLANS`, for this transaction only); off, a SET before and
    a RESET after the write, two statements more. Behind a transaction-mode pooler nothing is
    prepared, and the pipeline sends no SET (an error between SET and RESET would leave it on
    a shared server session)."""
    if not conn.autocommit:  # a connection not of the store's pool: its own transaction
        statement_params = write.params_of_statements(params)
        writing = conn.cursor()
        async with conn.transaction():
            await conn.cursor().execute(write.lock, statement_params)
            await writing.execute(write.write, statement_params)
        return await writing.fetchall()
    if settings.DATABASE_LOCKED_FUNCTIONS and write.usable and await functions.present(conn, write):
        try:
            cursor = await conn.execute(write.call_sql, params)
            return await cursor.fetchall()
        except UndefinedFunction as error:
            if error.diag.context:  # raised inside the function: not that it is missing
                raise
            functions.forget(write)  # dropped since (a newer release's migrate): as below
    params = write.params_of_statements(params)
    pooled = bool(settings.DATABASE_POOLER)
    in_lock = settings.DATABASE_PLAN_IN_LOCK and not pooled
    writing = conn.cursor()
    async with conn.pipeline():
        if in_lock:
            await conn.execute(lock_then_generic_plans(write.lock), params)
        else:
            if not pooled:
                await conn.execute(_SET_GENERIC_PLANS)
            await conn.execute(write.lock, params)
        await writing.execute(write.write, params)
        if not in_lock and not pooled:
            await conn.execute(_RESET_PLANS)
    return await writing.fetchall()


def prepared_write(statement: str, params: Any) -> list[tuple[Any, ...]]:
    """Run one fixed write (with RETURNING) on Django's connection, inside the caller's
    transaction, and return its rows: the synchronous twin of `locked_write`'s write (the
    erasing statement of `services.fact_delete`, the portal's and staff's delete).

    Django binds parameters on the client, so PostgreSQL plans such a statement on every call,
    which for the erasing statement costs more than running it. Here it is prepared on the
    server (`django_cursor.prepared_cursor`, `prepare=True`: named from the first call) and runs
    its cached generic plan: `SQL_GENERIC_PLANS_ON` before it and `SQL_GENERIC_PLANS_BACK` after
    it, the three in one round trip (pipeline mode), ask for that plan and put the caller's
    `plan_cache_mode` back, both for the transaction only. Off (`DATABASE_PREPARED_WRITES=false`,
    `MEMORY_PREPARED_STATEMENTS=false`, behind a transaction-mode pooler, or the prepared
    cursor's fast path off): Django's own cursor, one statement planned each call, as before.
    Errors are Django's either way; one raised by the write breaks the caller's transaction as
    any statement's would (the settings made with it go with its rollback)."""
    db = connections[DEFAULT_DB_ALIAS]
    writing = None
    if (
        settings.DATABASE_PREPARED_WRITES
        and settings.MEMORY_PREPARED_STATEMENTS
        and not settings.DATABASE_POOLER
    ):
        writing = django_cursor.prepared_cursor(db, prepare=True)
    if writing is None:
        with db.cursor() as cursor:
            cursor.execute(statement, params)
            return cursor.fetchall()
    try:
        with pipelined(), db.cursor() as control:
            control.execute(SQL_GENERIC_PLANS_ON)
            writing.execute(statement, params)
            control.execute(SQL_GENERIC_PLANS_BACK)
        return writing.fetchall()
    finally:
        writing.close()
