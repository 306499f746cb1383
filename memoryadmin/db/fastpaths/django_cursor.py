"""FASTPATH_DJANGO_CURSOR: the agent's fixed statements on a server-binding, binary psycopg
cursor, prepared (or, behind a transaction-mode pooler, not: `MEMORY_PREPARED_STATEMENTS`),
returned bare (without Django's CursorWrapper) when nothing reads the wrapper.

Written against Django 5.2 and psycopg 3.3. The private name it uses is psycopg's
`cursor._query`, which Django's query log reads (`last_executed_query`) and which psycopg
leaves empty after a prepared execution: the cursor keeps the statement's text there. Django's
`ServerBindingCursor` (django.db.backends.postgresql.base) is the base class. What a bare cursor
does in place of Django's wrapper (the broken-transaction check, psycopg's errors turned into
Django's, the thread-sharing check) is Django's public connection API.

Safe fallback (the setting off, or Django or psycopg not the version it was written for, or
`ServerBindingCursor` gone): Django's public `connection.cursor()`, client-side binding and
text results, no prepared statements; the same rows, each statement planned every time.
Buys (bench/RESULTS.md, "Fenced speed tricks"): see docs/ARCHITECTURE.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg.pq import Format

from . import broken, enabled, fits

SETTING = "FASTPATH_DJANGO_CURSOR"


def prepared_cursor(db: Any, *, prepare: bool = True) -> Any:
    """A server-binding, binary cursor on Django's connection `db` (PostgreSQL) whose statements
    are prepared (`prepare`; off behind a transaction-mode pooler, where each statement is sent
    unnamed, which pgbouncer carries), or None when the trick is off or no longer fits: the
    caller then uses `db.cursor()`."""
    if not enabled(SETTING):
        return None
    classes = _cursor_classes()
    if classes is None:
        return None
    prepared_class, bare_class = classes
    db.close_if_health_check_failed()
    db.ensure_connection()
    raw = db.connection
    if prepare and raw.prepare_threshold is None:  # Django's default; only these cursors care
        raw.prepare_threshold = 5
    wrapped = db.queries_logged or bool(db.execute_wrappers)
    cursor = (prepared_class if wrapped else bare_class)(raw)
    cursor.prepare_statements = prepare
    # Results in binary: the same values, but timestamps are read by psycopg's C loader instead
    # of the text one Django installs (a third of a read's time on this path).
    cursor.format = Format.BINARY
    db.validate_thread_sharing()
    if wrapped:
        with db.wrap_database_errors:
            return db.make_debug_cursor(cursor) if db.queries_logged else db.make_cursor(cursor)
    cursor.django_connection = db
    return cursor


@dataclass(frozen=True)
class _LoggedQuery:
    query: bytes


_classes: tuple[type, type] | None = None


def _cursor_classes() -> tuple[type, type] | None:
    """Made once per process; None (and the trick marked broken) when it no longer fits."""
    global _classes
    if _classes is None:
        _classes = _make_classes()
    return _classes


def _make_classes() -> tuple[type, type] | None:
    try:
        from django.db.backends.postgresql.base import ServerBindingCursor
    except ImportError:
        broken(SETTING, "django.db.backends.postgresql.base.ServerBindingCursor is gone")
        return None
    if not (fits(SETTING, "django", 5) and fits(SETTING, "psycopg", 3)):
        return None

    class PreparedCursor(ServerBindingCursor):
        prepare_statements = True

        def execute(
            self,
            query: Any,
            params: Any = None,
            *,
            prepare: bool | None = None,
            binary: bool | None = None,
        ) -> Any:
            result = super().execute(query, params, prepare=self.prepare_statements, binary=binary)
            # Django's query log reads the last query from psycopg's private `_query`, which
            # psycopg leaves empty after a prepared execution: keep the statement's text there.
            self._query = _LoggedQuery(query.encode() if isinstance(query, str) else query)
            return result

    class BareCursor(PreparedCursor):
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

    return PreparedCursor, BareCursor
