"""Connection plumbing for the hot path: the prepared cursor the agent's fixed statements run
on, and psycopg's pipeline mode on Django's connection. Kept apart from the reads and writes
that use it, so that each of those reads as SQL and rules only."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg.pq import Format, TransactionStatus


def hot_cursor() -> Any:
    """A cursor on Django's connection for the agent's fixed statements: server-side binding and
    a prepared statement per statement text, so PostgreSQL plans each once per connection (the
    plan cost more than running these statements). Django turns prepared statements off by
    default for the sake of transaction-mode poolers; `MEMORY_PREPARED_STATEMENTS=false` does
    the same here.

    Errors are Django's, and a statement refuses to run in a broken transaction, as with any
    Django cursor. Django's cursor wrapper is used only when something reads it: queries being
    logged (DEBUG, the test suite's query counts) or an execute wrapper installed; otherwise
    psycopg's cursor is returned as it is, without the wrapper's layers (about a third of the
    client's CPU for one of these statements)."""
    db = connections[DEFAULT_DB_ALIAS]  # once: each `connection.x` is a thread-local lookup
    if not settings.MEMORY_PREPARED_STATEMENTS:
        return db.cursor()
    db.close_if_health_check_failed()
    db.ensure_connection()
    raw = db.connection
    if raw.prepare_threshold is None:  # Django's default; only server-binding cursors care
        raw.prepare_threshold = 5
    wrapped = db.queries_logged or bool(db.execute_wrappers)
    cursor = (_prepared_cursor_class() if wrapped else _bare_cursor_class())(raw)
    # Results in binary: the same values, but timestamps are read by psycopg's C loader instead
    # of the text one Django installs (a third of a read's time on this path).
    cursor.format = Format.BINARY
    if wrapped:
        with db.wrap_database_errors:
            return db._prepare_cursor(cursor)
    db.validate_thread_sharing()
    cursor.django_connection = db
    return cursor


@dataclass(frozen=True)
class _LoggedQuery:
    query: bytes


@functools.cache
def _prepared_cursor_class() -> type:
    from django.db.backends.postgresql.base import ServerBindingCursor

    class PreparedCursor(ServerBindingCursor):
        def execute(
            self,
            query: Any,
            params: Any = None,
            *,
            prepare: bool | None = None,
            binary: bool | None = None,
        ) -> Any:
            result = super().execute(query, params, prepare=True, binary=binary)
            # Django's query log reads the last query from `_query`, which psycopg leaves
            # empty after a prepared execution: keep the statement's text there for it.
            self._query = _LoggedQuery(query.encode() if isinstance(query, str) else query)
            return result

    return PreparedCursor


@functools.cache
def _bare_cursor_class() -> type:
    class BareCursor(_prepared_cursor_class()):  # type: ignore[misc]
        """What Django's CursorWrapper guarantees, without the wrapper: the broken-transaction
        check, and psycopg's errors turned into Django's (a fetch may raise the error of a
        statement sent earlier in pipeline mode)."""

        django_connection: Any

        def execute(
            self,
            query: Any,
            params: Any = None,
            *,
            prepare: bool | None = None,
            binary: bool | None = None,
        ) -> Any:
            db = self.django_connection
            db.validate_no_broken_transaction()
            with db.wrap_database_errors:
                return super().execute(query, params, binary=binary)

        def fetchone(self) -> Any:
            with self.django_connection.wrap_database_errors:
                return super().fetchone()

        def fetchall(self) -> Any:
            with self.django_connection.wrap_database_errors:
                return super().fetchall()

    return BareCursor


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
