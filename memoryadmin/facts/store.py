"""DjangoMemoryStore: the upstream async MemoryStore protocol, in-process, over the services and
selectors. An agent host that runs inside this Django project uses it instead of the HTTP client.

The agent's reads run on every turn, so on PostgreSQL they do not hop to a thread: they run the
selectors' own SQL (`facts/sql.py`, so the rows are the same by construction) on a native async
psycopg connections opened beside Django's, a few per event loop (`_LoopConnections`), all
closed when that loop ends: no connection outlives its loop and no loop's shutdown waits on
them. An agent host may also hold the store as `async with DjangoMemoryStore() as store:` (or
call `await store.aclose()`), which closes the current loop's connections at once. Upserts run
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
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from types import TracebackType
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone
from psycopg.pq import TransactionStatus

from memoryadmin_client.text import clamp_query
from memoryadmin_client.types import MemoryCategory, MemoryFact

from . import erasure, positions, replicas, selectors, services
from .actors import Actor
from .sql import SQL_FACTS, SQL_PURGE_GENERATION, SQL_SEARCH, SQL_TIER_ONE
from .validation import clean_subject_id, normalize_key, session_tag

_CATEGORIES = {category.value: category for category in MemoryCategory}
_IDLE = TransactionStatus.IDLE
_ROLLBACK = (TransactionStatus.INTRANS, TransactionStatus.INERROR)


def to_wire(fact: Any) -> MemoryFact:
    """The upstream shape of a stored fact, as the agent sees it (any object with the wire
    attributes: a selectors.AgentFact, a services.FactState or a model row)."""
    return MemoryFact.model_construct(
        key=fact.key,
        value=fact.value,
        category=_CATEGORIES[fact.category],
        updated_at=fact.updated_at,
        source_session_id=fact.source_session_id or None,
        version=fact.version,
    )


def _wire_rows(rows: Iterable[Sequence[Any]]) -> list[MemoryFact]:
    """Rows in AgentFact column order straight to the wire shape. The rows come from our own
    table, already valid, so they skip validation (`model_construct`). Setting pydantic's
    private slots by hand instead was measured (bench/RESULTS.md, "Fenced speed tricks") to buy
    less than the noise of a read, so it went."""
    construct = MemoryFact.model_construct
    return [
        construct(
            key=row[0],
            value=row[1],
            category=_CATEGORIES[row[2]],
            updated_at=row[3],
            source_session_id=row[4] or None,
            version=row[5],
        )
        for row in rows
    ]


# --- the native async connections ---------------------------------------------------------------


class _LoopConnections:
    """One event loop's psycopg connections, at most `size` of them.

    Connections are opened in the calling task and nothing runs in the background (a pool's
    background connect or reset task is what hung `asyncio.run` at the loop's end), and all of
    them are closed when the loop ends: `_close_at_loop_end` waits in a task of its own, which
    the loop's shutdown cancels (`asyncio.run`, pytest-asyncio, `asyncio.Runner`), or at once by
    `close_pools()` / `DjangoMemoryStore.aclose()`. An idle connection is reused without any
    checkout bookkeeping (a list pop), so a long-lived loop keeps the speed of a kept
    connection."""

    def __init__(self, size: int, alias: str = "default") -> None:
        self.size = size
        self.alias = alias
        self.idle: list[Any] = []
        self.opened = 0  # idle and in use
        self.waiters: deque[asyncio.Future[None]] = deque()
        self.closed = False

    async def acquire(self) -> Any:
        from psycopg import AsyncConnection

        while True:
            if self.closed:
                raise RuntimeError("the store's connections for this event loop are closed")
            if self.idle:
                return self.idle.pop()
            if self.opened < self.size:
                self.opened += 1
                try:
                    return await AsyncConnection.connect(
                        **_conninfo(self.alias),
                        autocommit=True,
                        # Behind a transaction-mode pooler nothing is prepared (pgbouncer 1.18
                        # cannot carry a prepared statement from one transaction to the next).
                        prepare_threshold=None if settings.DATABASE_POOLER else 5,
                    )
                except BaseException:
                    self.opened -= 1
                    self._wake()
                    raise
            waiter = asyncio.get_running_loop().create_future()
            self.waiters.append(waiter)
            try:
                await waiter
            finally:
                with suppress(ValueError):
                    self.waiters.remove(waiter)

    async def release(self, conn: Any) -> None:
        """Back to the idle list if it is clean; a broken connection, or one left inside a
        statement (a cancelled call), is closed instead; a transaction left open is rolled
        back."""
        try:
            status = conn.info.transaction_status
            if not (self.closed or conn.closed or conn.broken) and status in _ROLLBACK:
                await conn.rollback()
                status = conn.info.transaction_status
            if self.closed or conn.closed or conn.broken or status != _IDLE:
                await conn.close()
                self.opened -= 1
            else:
                self.idle.append(conn)
        except BaseException:
            await conn.close()
            self.opened -= 1
            raise
        finally:
            self._wake()

    def _wake(self) -> None:
        for waiter in self.waiters:
            if not waiter.done():
                waiter.set_result(None)
                return

    async def close(self) -> None:
        self.closed = True
        idle, self.idle = self.idle, []
        for conn in idle:
            await conn.close()  # no round trip: psycopg just closes the socket
            self.opened -= 1
        for waiter in self.waiters:
            if not waiter.done():
                waiter.set_result(None)  # they see `closed` and raise


# Keyed weakly by the loop, and nothing in a value refers to its loop: a loop that is dropped
# takes its entry with it. Per loop, the connections of each database (the primary, and each
# read replica the reads have used).
_natives: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _LoopConnections]] = (
    weakref.WeakKeyDictionary()
)
_watchers: set[asyncio.Task[None]] = set()  # tasks must be referenced while they wait


def native_enabled() -> bool:
    return settings.MEMORY_STORE_NATIVE_ASYNC


def _conninfo(alias: str = "default") -> dict[str, Any]:
    """Django's own connection settings (`replicas.conninfo`), with the session's zone as a
    startup option: a pooler refuses startup options (pgbouncer); its server's zone applies."""
    if settings.DATABASE_POOLER:
        return replicas.conninfo(alias)
    return {**replicas.conninfo(alias), "options": "-c TimeZone=UTC"}


async def _close_at_loop_end(natives: dict[str, _LoopConnections]) -> None:
    """Waits until the loop shuts down (its tasks are cancelled), then closes its connections."""
    try:
        await asyncio.get_running_loop().create_future()
    finally:
        for native in list(natives.values()):
            await native.close()
        await positions.close_loop()


def _native(alias: str = "default") -> _LoopConnections:
    loop = asyncio.get_running_loop()
    natives = _natives.get(loop)
    if natives is None:
        natives = _natives[loop] = {}
        watcher = loop.create_task(_close_at_loop_end(natives), name="memoryadmin-store-close")
        _watchers.add(watcher)
        watcher.add_done_callback(_watchers.discard)
    native = natives.get(alias)
    if native is None or native.closed:
        native = natives[alias] = _LoopConnections(max(1, settings.MEMORY_STORE_POOL_SIZE), alias)
    return native


async def close_pools() -> None:
    """Close this event loop's connections now. A host that ends its loop some other way than
    by cancelling its tasks (`loop.close()` straight after `run_until_complete`) calls it, or
    `DjangoMemoryStore.aclose()`, first; `asyncio.run` and pytest-asyncio need neither."""
    natives = _natives.pop(asyncio.get_running_loop(), None)
    if natives is not None:
        for native in list(natives.values()):
            await native.close()
    await positions.close_loop()


@asynccontextmanager
async def _connection(alias: str = "default") -> AsyncIterator[Any]:
    """A connection of this loop's, back to it (or closed) when the call ends."""
    native = _native(alias)
    conn = await native.acquire()
    try:
        yield conn
    finally:
        await native.release(conn)


async def _fetch_on(alias: str, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A read; on a kept connection the server dropped (a restart, a failover) it is closed and
    the read runs once more on a new one (which a multi-host URL points at the new primary)."""
    import psycopg

    attempts = max(1, settings.MEMORY_STORE_POOL_SIZE) + 1  # every idle one may be stale
    for attempt in range(attempts):
        async with _connection(alias) as conn:
            try:
                cursor = await conn.execute(sql, params)
                return await cursor.fetchall()
            except psycopg.OperationalError:
                if attempt == attempts - 1 or not conn.broken:
                    raise
    raise AssertionError("unreachable")


async def _on_replica_or_primary(
    alias: str, sql: str, params: dict[str, Any]
) -> list[tuple[Any, ...]]:
    """The read on `alias`; if that is a replica and it fails there, marked down and the read
    made on the primary (as `replicas.on_replica_or_primary`)."""
    import psycopg

    if alias == replicas.PRIMARY:
        return await _fetch_on(alias, sql, params)
    try:
        return await _fetch_on(alias, sql, params)
    except psycopg.OperationalError:
        replicas.mark_down(alias)
        return await _fetch_on(replicas.PRIMARY, sql, params)


async def _fetch(sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """An agent's read of `params["subject"]`: on a replica that has replayed the traveller's
    last write, else the primary (as `replicas.subject_read`: the traveller's position read from
    Redis first, or with `DATABASE_REPLICA_READ_OVERLAP` while the replica runs the query, rows
    from a replica that had not replayed it then dropped for the primary's); a replica that fails
    the read is skipped and the primary answers."""
    if not settings.DATABASE_REPLICAS:
        return await _fetch_on("default", sql, params)
    import psycopg

    state = replicas.replica_candidate(own_connection=True)
    if state is None:
        return await _fetch_on(replicas.PRIMARY, sql, params)
    if not positions.in_redis():
        alias = replicas.subject_read_alias(params["subject"])
        return await _on_replica_or_primary(alias, sql, params)
    keys = (replicas.subject_key(params["subject"]),)
    if not settings.DATABASE_REPLICA_READ_OVERLAP:  # ask first, then read where it says
        pending = await positions.ask_async(keys)
        needed = None if pending is None else await pending.answer()
        if needed is None or needed > (state.replay_lsn or 0):
            return await _fetch_on(replicas.PRIMARY, sql, params)
        return await _on_replica_or_primary(state.alias, sql, params)
    pending = await positions.ask_async(keys)
    if pending is None or (pending.known is not None and pending.known > (state.replay_lsn or 0)):
        return await _fetch_on(replicas.PRIMARY, sql, params)
    if pending.known is not None:  # this process knows the position: no round trip
        return await _on_replica_or_primary(state.alias, sql, params)
    try:
        rows = await _fetch_on(state.alias, sql, params)
    except psycopg.OperationalError:
        await pending.answer()
        replicas.mark_down(state.alias)
        return await _fetch_on(replicas.PRIMARY, sql, params)
    except BaseException:
        await pending.answer()
        raise
    needed = await pending.answer()
    if needed is not None and needed <= (state.replay_lsn or 0):
        return rows
    return await _fetch_on(replicas.PRIMARY, sql, params)


async def _config() -> selectors.MemoryConfig:
    """The cached settings; only a stale cache (once per TTL) costs a hop to Django's thread."""
    return selectors.memory_config_if_fresh() or await sync_to_async(selectors.memory_config)()


# --- the store -----------------------------------------------------------------------------------


def _check_subject(subject_id: str) -> None:
    """Reads refuse an id that no write would accept, as HttpMemoryStore does (a ValueError),
    instead of answering "nothing" for a traveller who cannot exist."""
    clean_subject_id(subject_id)


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

    async def __aenter__(self) -> DjangoMemoryStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the current event loop's connections (the next call opens them again). Needed
        only where a loop ends without cancelling its tasks; see `close_pools`."""
        await close_pools()

    async def get_facts(self, subject_id: str) -> list[MemoryFact]:
        _check_subject(subject_id)
        if not self.native:
            return [
                to_wire(row) for row in await sync_to_async(selectors.facts_for_agent)(subject_id)
            ]
        if not (await _config()).settings.memory_enabled:
            return []
        return _wire_rows(await _fetch(SQL_FACTS, {"subject": subject_id, "now": timezone.now()}))

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

    async def upsert_facts(
        self,
        subject_id: str,
        facts: list[MemoryFact],
        *,
        evidence: Mapping[str, str] | None = None,
    ) -> None:
        """`evidence`: save_memory's quotes by key (see HttpMemoryStore.upsert_facts)."""
        quotes = evidence or {}
        drafts = [
            services.FactDraft(f.key, f.value, f.category, evidence=quotes.get(f.key, ""))
            for f in facts
        ]
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
            await replicas.written_async(conn, subject_id)

    async def delete_fact(self, subject_id: str, key: str) -> bool:
        if not normalize_key(key):
            return False  # no fact has an empty key (upstream and HttpMemoryStore answer False)
        if not (self.native and erasure.native_ready()):
            return await sync_to_async(services.fact_delete)(
                subject_id=subject_id,
                key=normalize_key(key),
                actor=self.actor,
                reason="deleted by the agent",
            )
        async with _connection() as conn:
            deleted = await services.fact_delete_async(
                conn=conn,
                subject_id=subject_id,
                key=key,
                actor=self.actor,
                reason="deleted by the agent",
            )
            await replicas.written_async(conn, subject_id)
            return deleted

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
