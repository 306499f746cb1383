"""DjangoMemoryStore: the upstream async MemoryStore protocol, in-process, over the services and
selectors. An agent host that runs inside this Django project uses it instead of the HTTP client.

The agent's reads run on every turn, so on PostgreSQL they do not hop to a thread: they run the
selectors' own SQL (`facts/sql.py`, so the rows are the same by construction) on a native async
psycopg pool opened beside Django's connections, one pool per event loop (one of its
connections kept aside for the loop's calls when it is free, see `_Native`). Upserts run
`services.fact_upsert_async` on the same pool (the same plan, statements and audit events as
`fact_upsert`), deletes `services.fact_delete_async` (the same one erasing statement as
`fact_delete`, with the erasers' SQL in it); clears go through their service in Django's thread.

Tests run inside a transaction on Django's connection that a second connection cannot see, so
the test suite turns the native path off (`MEMORY_STORE_NATIVE_ASYNC`) except where it tests
that path itself on committed data.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections
from django.utils import timezone
from psycopg.pq import TransactionStatus

from memoryadmin_client.text import clamp_query
from memoryadmin_client.types import MemoryCategory, MemoryFact

from . import erasure, selectors, services
from .actors import Actor
from .db import is_postgresql
from .sql import SQL_FACTS, SQL_PURGE_GENERATION, SQL_SEARCH, SQL_TIER_ONE
from .validation import normalize_key, session_tag

_CATEGORIES = {category.value: category for category in MemoryCategory}
_IDLE = TransactionStatus.IDLE


def to_wire(fact: Any) -> MemoryFact:
    """The upstream shape of a stored fact, as the agent sees it (any object with the wire
    attributes: a selectors.AgentFact, a services.FactState or a model row)."""
    return MemoryFact.model_construct(
        key=fact.key,
        value=fact.value,
        category=_CATEGORIES[fact.category],
        updated_at=fact.updated_at,
        source_session_id=fact.source_session_id or None,
    )


_WIRE_FIELDS = frozenset(MemoryFact.model_fields)
_new_object = object.__new__
_set = object.__setattr__


def _wire_rows(rows: Iterable[Sequence[Any]]) -> list[MemoryFact]:
    """Rows in AgentFact column order straight to the wire shape. The rows come from our own
    table, already valid, so neither validation nor `model_construct` (a third of a read's
    Python time) is needed: each object gets the four slots pydantic keeps, which is what
    `model_construct` fills in (tests/facts/test_store.py checks they compare equal)."""
    facts = []
    for row in rows:
        fact = _new_object(MemoryFact)
        _set(fact, "__dict__", {
            "key": row[0],
            "value": row[1],
            "category": _CATEGORIES[row[2]],
            "updated_at": row[3],
            "source_session_id": row[4] or None,
        })
        _set(fact, "__pydantic_fields_set__", set(_WIRE_FIELDS))
        _set(fact, "__pydantic_extra__", None)
        _set(fact, "__pydantic_private__", None)
        facts.append(fact)
    return facts


# --- the native async pool -----------------------------------------------------------------------


@dataclass
class _Native:
    """One event loop's connections: a psycopg pool, and one connection taken from it and kept
    aside. A read or upsert uses the kept connection when nothing else of this loop is on it,
    which saves the pool's checkout and return (a fifth of a read's time); otherwise it takes
    one from the pool."""

    pool: Any
    kept: Any = None
    kept_busy: bool = False


_natives: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[_Native]] = (
    weakref.WeakKeyDictionary()
)


def native_enabled() -> bool:
    return bool(getattr(settings, "MEMORY_STORE_NATIVE_ASYNC", False)) and (
        is_postgresql()
    )


def _conninfo() -> dict[str, Any]:
    """Django's own connection settings (the test database's name included, when testing)."""
    params = connections["default"].settings_dict
    info = {
        "dbname": params["NAME"],
        "user": params.get("USER") or None,
        "password": params.get("PASSWORD") or None,
        "host": params.get("HOST") or None,
        "port": params.get("PORT") or None,
        "options": "-c TimeZone=UTC",
    }
    for name in ("sslmode", "sslrootcert", "sslcert", "sslkey", "application_name"):
        if name in params.get("OPTIONS", {}):
            info[name] = params["OPTIONS"][name]
    return {name: value for name, value in info.items() if value is not None}


async def _open_native() -> _Native:
    from psycopg_pool import AsyncConnectionPool

    pool = AsyncConnectionPool(
        kwargs={**_conninfo(), "autocommit": True},
        min_size=1,
        max_size=max(2, int(getattr(settings, "MEMORY_STORE_POOL_SIZE", 4))),
        open=False,
        name="memoryadmin-store",
    )
    await pool.open()
    return _Native(pool=pool)


async def _native() -> _Native:
    loop = asyncio.get_running_loop()
    task = _natives.get(loop)
    if task is None or (task.done() and task.exception() is not None):
        task = loop.create_task(_open_native())
        _natives[loop] = task
    return await task


async def close_pools() -> None:
    """Close this event loop's pool (an agent host calls it on shutdown; tests between runs)."""
    task = _natives.pop(asyncio.get_running_loop(), None)
    if task is not None:
        native = await task
        if native.kept is not None:
            await native.pool.putconn(native.kept)
        await native.pool.close()


@asynccontextmanager
async def _connection() -> AsyncIterator[Any]:
    """A connection of this loop's: the kept one when it is free, else one from the pool."""
    native = await _native()
    if native.kept_busy:
        async with native.pool.connection() as conn:
            yield conn
        return
    native.kept_busy = True
    try:
        if native.kept is None:
            native.kept = await native.pool.getconn()
        yield native.kept
    finally:
        conn = native.kept
        if conn is not None and (conn.broken or conn.info.transaction_status != _IDLE):
            # Lost, or left mid-statement (a cancelled call): the pool discards or resets it,
            # and the next call takes another.
            native.kept = None
            await native.pool.putconn(conn)
        native.kept_busy = False


async def _fetch(sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    async with _connection() as conn:
        cursor = await conn.execute(sql, params)
        return await cursor.fetchall()


async def _config() -> selectors.MemoryConfig:
    """The cached settings; only a stale cache (once per TTL) costs a hop to Django's thread."""
    return selectors.memory_config_if_fresh() or await sync_to_async(selectors.memory_config)()


# --- the store -----------------------------------------------------------------------------------


def _check_subject(subject_id: str) -> None:
    """Reads refuse an id that no write would accept, as HttpMemoryStore does (a ValueError),
    instead of answering "nothing" for a traveller who cannot exist."""
    services.clean_subject_id(subject_id)



class DjangoMemoryStore:
    """Writes are recorded with `actor` (the agent by default) and the session's 12-hex tag.

    Upstream's rules hold: values over 200 characters are clamped with a "...[truncated]"
    marker, a refused fact raises a ValueError (FactInvalid, FactBlocked), search queries are
    cut to 100 characters like HttpMemoryStore's. With memory switched off reads are empty and
    saves raise FactMemoryDisabled; deleting and clearing still work (forgetting is always
    allowed)."""

    def __init__(
        self,
        *,
        actor: Actor | None = None,
        session_id: str | None = None,
        native: bool | None = None,
    ) -> None:
        self.actor = actor or Actor.agent("in-process")
        self.session_tag = session_tag(session_id)
        self._native = native

    @property
    def native(self) -> bool:
        return native_enabled() if self._native is None else self._native

    async def get_facts(self, subject_id: str) -> list[MemoryFact]:
        _check_subject(subject_id)
        if not self.native:
            return [to_wire(row) for row in await sync_to_async(selectors.facts_for_agent)(
                subject_id
            )]
        if not (await _config()).settings.memory_enabled:
            return []
        return _wire_rows(
            await _fetch(SQL_FACTS, {"subject": subject_id, "now": timezone.now()})
        )

    async def search_facts(self, subject_id: str, query: str) -> list[MemoryFact]:
        _check_subject(subject_id)
        query = clamp_query(query)  # the same 100 characters as HttpMemoryStore
        terms = selectors.search_terms(query)
        if not terms:
            return await self.get_facts(subject_id)
        if not self.native:
            rows = await sync_to_async(selectors.facts_search)(subject_id, query)
            return [to_wire(row) for row in rows]
        if not (await _config()).settings.memory_enabled:
            return []
        params = {"subject": subject_id, "now": timezone.now(), "terms": terms}
        return _wire_rows(await _fetch(SQL_SEARCH, params))

    async def tier_one(self, subject_id: str) -> list[MemoryFact]:
        _check_subject(subject_id)
        if not self.native:
            return [to_wire(row) for row in await sync_to_async(selectors.tier_one)(subject_id)]
        memory = (await _config()).settings
        if not memory.memory_enabled:
            return []
        params = {"subject": subject_id, "now": timezone.now(), "cap": memory.tier_one_cap}
        return _wire_rows(await _fetch(SQL_TIER_ONE, params))

    async def purge_generation(self, subject_id: str) -> int:
        _check_subject(subject_id)
        if not self.native:
            return await sync_to_async(selectors.purge_generation)(subject_id)
        [(generation,)] = await _fetch(SQL_PURGE_GENERATION, {"subject": subject_id})
        return generation

    async def upsert_facts(self, subject_id: str, facts: list[MemoryFact]) -> None:
        drafts = [services.FactDraft(f.key, f.value, f.category) for f in facts]
        if not self.native:
            await sync_to_async(services.fact_upsert)(
                subject_id=subject_id,
                facts=drafts,
                actor=self.actor,
                reason="saved by the agent",
                session_tag=self.session_tag,
            )
            return
        config = await _config()
        async with _connection() as conn:
            await services.fact_upsert_async(
                conn=conn,
                subject_id=subject_id,
                facts=drafts,
                actor=self.actor,
                config=config,
                reason="saved by the agent",
                session_tag=self.session_tag,
            )

    async def delete_fact(self, subject_id: str, key: str) -> bool:
        if not (self.native and erasure.native_ready()):
            return await sync_to_async(services.fact_delete)(
                subject_id=subject_id,
                key=normalize_key(key),
                actor=self.actor,
                reason="deleted by the agent",
            )
        async with _connection() as conn:
            return await services.fact_delete_async(
                conn=conn,
                subject_id=subject_id,
                key=key,
                actor=self.actor,
                reason="deleted by the agent",
            )

    async def clear(self, subject_id: str) -> None:
        await sync_to_async(services.subject_clear)(
            subject_id=subject_id, actor=self.actor, reason="cleared by the agent"
        )

    async def memory_enabled(self) -> bool:
        """The airline's switch; the tools ask it to tell "nothing saved" from "memory off"."""
        return (await _config()).settings.memory_enabled

    async def record_uses(self, subject_id: str, turns: Sequence[dict[str, Any]]) -> None:
        """Use receipts of one or many turns (memoryadmin_client.usage sends them after the
        turn): one INSERT, through the recorder the usage app sets from its AppConfig.ready()
        (`facts` imports nothing above it). Without that app, receipts are dropped."""
        if _USE_RECORDER is not None and turns:
            await sync_to_async(_USE_RECORDER)(subject_id, list(turns))


UseRecorderFn = Callable[[str, list[dict[str, Any]]], Any]
_USE_RECORDER: UseRecorderFn | None = None


def use_recorder_set(recorder: UseRecorderFn | None) -> None:
    """Called by the usage app: how DjangoMemoryStore.record_uses stores receipts."""
    global _USE_RECORDER
    _USE_RECORDER = recorder
