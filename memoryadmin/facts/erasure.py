"""The one erasure path. Deleting is erasing, whoever deletes: staff, the traveller, the agent,
a reviewer's rejection or the retention sweep.

Erasing a fact removes its row, blanks the value snapshots of every event about it, replaces the
fact's key in the history by a keyed hash (so a fact's events still group, but the topic is gone),
records one event for the erasure, and calls every registered eraser so that copies of the value
kept elsewhere go too. Every event carries its keyed hash from the start (`FactEvent.key_hash`,
see `keyhash`): events are found through (subject_id, key_hash), and erasing copies the hash over
the unindexed `key` and blanks the snapshots, so the history's indexes are left alone.

Apps above `facts` (stored API replies, extraction transcripts, exports) register their eraser
from their `AppConfig.ready()`; `facts` never imports them.

Every entry point is a fixed number of SQL statements whatever the number of facts (one
traveller with 5 or 5,000 facts, or a sweep chunk of 1,000 facts across 1,000 travellers): one
statement, in which the DELETE, the redaction, the erasure events and the registered erasers'
SQL (`register_eraser(..., sql=...)`) are data-modifying parts of one WITH query. The store's
native async delete of one fact (`erase_fact_write`) runs the same erasure as the statements of
a server-side function, or, where that function is not made, this statement.

Callers are the services (`facts.services`), which hold the locks; nothing else calls these.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from psycopg.sql import SQL, Identifier

from memoryadmin import db

from .actors import Actor
from .keyhash import DIGEST_PREFIX, history_hashes, is_key_digest, key_digest
from .models import EventAction
from .sql import (
    ERASE_FACT_ERASER_NAMES,
    PLPGSQL_ERASE_FACT,
    PLPGSQL_ERASE_FACT_DECLARE,
    SQL_ERASE_FACTS,
    SQL_ERASE_SUBJECT,
    SQL_LOCK_SUBJECT_NAMED,
)

__all__ = [
    "DIGEST_PREFIX",
    "Erased",
    "erase_facts",
    "erase_fact_write",
    "erase_subject",
    "history_hashes",
    "is_key_digest",
    "key_digest",
    "native_ready",
    "register_eraser",
    "registered_erasers",
]


@dataclass(frozen=True)
class Erased:
    """What was just erased, handed to every registered eraser in the same transaction.

    `facts` are the (subject_id, key) pairs whose rows went; `cleared_subjects` are travellers
    who asked to forget everything (their facts are in `facts` only if listed by the caller, so
    erasers that keep per-traveller copies should look at `subject_ids`)."""

    facts: tuple[tuple[str, str], ...] = ()
    cleared_subjects: tuple[str, ...] = ()
    # How the facts went (the event action) and who erased each (actor kinds, in the order of
    # `facts`): for erasers that tell other systems what happened, never what the value was.
    action: str = ""
    actor_kinds: tuple[str, ...] = ()
    subject_ids: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        subjects = {subject_id for subject_id, _ in self.facts} | set(self.cleared_subjects)
        object.__setattr__(self, "subject_ids", frozenset(subjects))


Eraser = Callable[[Erased], None]


@dataclass(frozen=True)
class _Registration:
    erase: Eraser | None
    sql: str | None
    on_facts: bool
    on_subject: bool = True
    after_commit: Callable[[], None] | None = None


_ERASERS: dict[str, _Registration] = {}


def register_eraser(
    name: str,
    eraser: Eraser | None = None,
    *,
    sql: str | None = None,
    on_facts: bool = True,
    on_subject: bool = True,
    after_commit: Callable[[], None] | None = None,
) -> None:
    """Called from an AppConfig.ready() by each app that keeps a copy of a fact value, with
    either its SQL or a Python eraser (not both: one write path).

    `sql` is one data-modifying statement (UPDATE or DELETE, no RETURNING) over the travellers
    in the WITH query `erased_subjects(subject_id)` (or the facts in
    `erased_facts(subject_id, key_hash)`, each history hash of a fact that went), and may use the
    parameter `%(now)s`: it becomes part of the erasing statement itself (no statement of its
    own, and usable on the store's async connection). An `eraser` is called with `Erased`
    inside the erasing transaction and must be set-based (a fixed number of statements whatever
    the size of `Erased`); it keeps the store's native async delete off. `on_facts=False` says
    the eraser has nothing to do when single facts go (only on "forget everything");
    `on_subject=False` the opposite (its SQL may then read the facts statement's `v` and `gone`
    and its parameters). `after_commit`, optional, is called once the erasing transaction
    commits, on Django's connection only (the store's native path does not call it).
    Registering the same name again replaces it."""
    if (eraser is None) == (sql is None):
        raise ValueError(f"eraser {name!r}: give either its SQL or a Python eraser")
    _ERASERS[name] = _Registration(eraser, sql, on_facts, on_subject, after_commit)


def registered_erasers() -> frozenset[str]:
    """The names registered."""
    return frozenset(_ERASERS)


# --- one statement ------------------------------------------------------------------------------


_ERASER_PART = SQL(", {name} AS ({part})\n")


@functools.lru_cache(maxsize=32)
def erasing_statement(statement: str, parts: tuple[str, ...]) -> str:
    """One of the erasing statements of `facts/sql.py` with the erasers' SQL composed (psycopg.sql)
    where its `{erasers}` placeholder stands, as `eraser_0 AS (...)`, ...: the one part of them
    composed at run time, since the apps above `facts` register it. Returned as the string
    Django's cursor and its execute wrappers take; cached, since the parts rarely change."""
    erasers = SQL("").join(
        _ERASER_PART.format(name=Identifier(f"eraser_{n}"), part=SQL(part))
        for n, part in enumerate(parts)
    )
    return SQL(statement).format(erasers=erasers).as_string()


def _with_erasers(statement: str, registrations: list[_Registration]) -> str:
    return erasing_statement(statement, tuple(r.sql for r in registrations if r.sql))


def _fact_documents(
    entries: Sequence[tuple[str, str, Sequence[str], str, int | None, str]],
) -> dict[str, str]:
    """The facts and their history hashes as `SQL_ERASE_FACTS` takes them, from (subject_id,
    key, history hashes, actor kind, actor user id, actor label) each. Each set of rows travels
    as one JSON document: psycopg dumps a list for an array element by element in Python, a
    fifth of a sweep chunk's time for 1,000 facts."""
    facts = [
        {
            "subject_id": subject_id,
            "key": key,
            "digest": hashes[0],  # today's SECRET_KEY
            "kind": kind,
            "user_id": user_id,
            "label": label,
            "n": n,
        }
        for n, (subject_id, key, hashes, kind, user_id, label) in enumerate(entries)
    ]
    matches = [
        {"subject_id": subject_id, "key": key, "hash": digest}
        for subject_id, key, hashes, *_ in entries
        for digest in hashes
    ]
    return {"facts": json.dumps(facts), "matches": json.dumps(matches)}


def _params_erase_facts(
    rows: Sequence[tuple[str, str, Actor]], *, action: EventAction, reason: str, now: datetime
) -> dict[str, Any]:
    entries = [
        (
            subject_id,
            key,
            history_hashes(subject_id, key),
            str(actor.kind),
            getattr(actor.user, "pk", None),
            actor.label[:200],
        )
        for subject_id, key, actor in rows
    ]
    return {**_fact_documents(entries), "action": str(action), "reason": reason, "now": now}


def _split(*, on_facts: bool) -> tuple[list[_Registration], list[Eraser]]:
    """The erasers that apply, as (those run inside the statement, those called in Python)."""
    applying = [r for r in _ERASERS.values() if (r.on_facts if on_facts else r.on_subject)]
    return [r for r in applying if r.sql], [r.erase for r in applying if r.erase is not None]


def native_ready() -> bool:
    """Whether a fact can be erased on an async connection: every eraser that applies to facts
    gave its SQL (a Python eraser runs on Django's connection, another transaction)."""
    return not _split(on_facts=True)[1]


# The store's delete of one fact as `db.LockedWrite`: the traveller's lock, then the erasure as
# the statements of a server-side function (`PLPGSQL_ERASE_FACT`, made by `migrate`), or without
# it the erasing statement (`SQL_ERASE_FACTS`), both with every eraser registered.
_ERASE_FACT_PARAMS = (
    ("subject", "text"),
    ("key", "text"),
    ("digest", "text"),
    ("hashes", "text[]"),
    ("kind", "text"),
    ("user", "integer"),
    ("label", "text"),
    ("action", "text"),
    ("reason", "text"),
    ("now", "timestamptz"),
)
_ERASE_FACT_RETURNS = (("subject_id", "varchar"), ("key", "varchar"))


_READS_ERASED_FACTS = re.compile(r"\berased_facts\b")


@functools.lru_cache(maxsize=8)
def _erase_fact_write(parts: tuple[str, ...]) -> db.LockedWrite:
    def statements(selected: list[str]) -> str:
        return "".join(f"{ERASE_FACT_ERASER_NAMES}{part.strip()};\n" for part in selected)

    # An eraser that reads `erased_facts` runs once per history hash, with that hash alone
    # (each round's rows found by equality); the others once.
    per_hash: list[str] = []
    once: list[str] = []
    for part in parts:
        (per_hash if _READS_ERASED_FACTS.search(part) else once).append(part)
    body = PLPGSQL_ERASE_FACT.format(fact_erasers=statements(per_hash), erasers=statements(once))
    return db.LockedWrite(
        prefix="memoryadmin_erase_fact",
        lock=SQL_LOCK_SUBJECT_NAMED,
        write=erasing_statement(SQL_ERASE_FACTS, parts),
        params=_ERASE_FACT_PARAMS,
        returns=_ERASE_FACT_RETURNS,
        body=body,
        declare=PLPGSQL_ERASE_FACT_DECLARE,
        statement_params=_erasing_statement_params,
    )


def _erasing_statement_params(params: dict[str, Any]) -> dict[str, Any]:
    """The function's parameters of one fact, as `SQL_ERASE_FACTS` takes them (its JSON)."""
    entry = (
        params["subject"],
        params["key"],
        params["hashes"],
        params["kind"],
        params["user"],
        params["label"],
    )
    return {**params, **_fact_documents([entry])}


def _erasers_sql() -> tuple[str, ...]:
    in_sql, in_python = _split(on_facts=True)
    if in_python:
        raise RuntimeError("an eraser without SQL cannot run on an async connection")
    return tuple(r.sql for r in in_sql if r.sql)


def erase_fact_write(
    subject_id: str, key: str, actor: Actor, *, action: EventAction, reason: str
) -> tuple[db.LockedWrite, dict[str, Any]]:
    """One fact's erasure for `db.locked_write` on the store's connection (the native delete:
    the caller checked `native_ready()`), with every eraser, and its parameters. Its rows are
    the (subject_id, key) deleted."""
    hashes = history_hashes(subject_id, key)
    return (
        _erase_fact_write(_erasers_sql()),
        {
            "subject": subject_id,
            "key": key,
            "digest": hashes[0],  # today's SECRET_KEY
            "hashes": hashes,
            "kind": str(actor.kind),
            "user": getattr(actor.user, "pk", None),
            "label": actor.label[:200],
            "action": str(action),
            "reason": reason,
            "now": timezone.now(),
        },
    )


def install_functions(cursor: Any) -> list[str]:
    """Make the store's delete function for the erasers registered now (`migrate`); where an
    eraser has no SQL there is none to make (the delete goes through Django's connection)."""
    writes = [_erase_fact_write(_erasers_sql())] if native_ready() else []
    return db.locked_functions_install(cursor, writes)


def erased_fact_summary(category: str, learned_at: datetime, version: int) -> dict[str, Any]:
    """What an erasure event keeps about the fact (the `after` of `SQL_ERASE_FACTS`' event):
    enough for support to answer "did you delete my meal preference?", never key or value."""
    return {
        "erased_fact": {
            "category": category,
            "learned_at": learned_at.isoformat(),
            "changes": version - 1,
        }
    }


# --- entry points ------------------------------------------------------------------------------


def erase_facts(rows: Sequence[tuple[str, str, Actor]], *, action: EventAction, reason: str) -> int:
    """Erase the given facts: (subject_id, key, actor) each. Used for one fact and for a sweep
    chunk; the caller holds the locks (a fact that is not there is skipped: no event, no
    eraser). Returns how many rows were deleted. No fact has an empty key: such a row is
    skipped (it has no keyed hash to look its history up by)."""
    rows = [row for row in rows if row[1]]
    if not rows:
        return 0
    now = timezone.now()
    in_sql, in_python = _split(on_facts=True)
    params = _params_erase_facts(rows, action=action, reason=reason, now=now)
    # Prepared, on its cached generic plan (planning it cost more than running it).
    deleted = db.prepared_write(_with_erasers(SQL_ERASE_FACTS, in_sql), params)
    kinds = {(subject_id, key): str(actor.kind) for subject_id, key, actor in rows}
    gone = [(s, k, kinds.get((s, k), "")) for s, k in deleted]
    if gone:
        erased = Erased(
            facts=tuple((subject_id, key) for subject_id, key, _ in gone),
            action=str(action),
            actor_kinds=tuple(kind for _, _, kind in gone),
        )
        for eraser in in_python:
            eraser(erased)
        _after_commit(on_facts=True)
        db.written(*(subject_id for subject_id, _, _ in gone))
    return len(gone)


def _after_commit(*, on_facts: bool) -> None:
    for registration in _ERASERS.values():
        applies = registration.on_facts if on_facts else registration.on_subject
        if applies and registration.after_commit is not None:
            transaction.on_commit(registration.after_commit)


def erase_subject(subject_id: str) -> list[tuple[str, str, datetime, int]]:
    """Forget everything about one traveller: every fact, every value in their history (any
    event still showing a key in plain), every copy elsewhere. Records no event (the caller
    records the "cleared" event and, from what this returns, one summary per fact). The caller
    has locked the subject. Returns (key, category, created_at, version) of each fact deleted:
    the key only so that the caller can hash it."""
    now = timezone.now()
    in_sql, in_python = _split(on_facts=False)
    statement = _with_erasers(SQL_ERASE_SUBJECT, in_sql)
    with connection.cursor() as cursor:
        cursor.execute(statement, {"subject": subject_id, "now": now})
        gone = [tuple(row) for row in cursor.fetchall()]
    erased = Erased(cleared_subjects=(subject_id,))
    for eraser in in_python:
        eraser(erased)
    _after_commit(on_facts=False)
    return gone
