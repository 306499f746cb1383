"""Connection plumbing for the hot path: the prepared cursor the agent's fixed statements run
on, and psycopg's pipeline mode on Django's connection. Kept apart from the reads and writes
that use it, so that each of those reads as SQL and rules only."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg.pq import TransactionStatus

from memoryadmin.db.fastpaths import django_cursor


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
