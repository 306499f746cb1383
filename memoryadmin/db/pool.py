"""The native async psycopg connections of `DjangoMemoryStore`: one `psycopg_pool`
`AsyncConnectionPool` per event loop and database, all closed when that loop ends, so a host
calling `asyncio.run(...)` per request leaks nothing and no loop's shutdown waits on them
(docs/ARCHITECTURE.md, "The agent's hot path").
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

from django.conf import settings

from . import positions, replicas
from .fastpaths import enabled as fastpath_enabled

# FASTPATH_STORE_RESIDENT_CONNECTION (below, `_LoopPools.take` / `give`): a loop keeps the
# connection its last call gave back, idle and out of the pool, for its next call: no checkout
# and return through the pool's locks; and a read reuses its connection's cursor. Uses
# psycopg's public API only; off, every call checks a connection out of the pool and back and
# reads through a new cursor (`conn.execute`).
RESIDENT = "FASTPATH_STORE_RESIDENT_CONNECTION"

# How long a call waits for a connection (all in use, or the server not answering: the pool
# connects in its worker and retries there, it does not hand the error to the caller) before
# `PoolTimeout`, an OperationalError. On the primary that rides out a restart or a promotion; a
# replica that cannot be reached fails sooner, is marked down and the primary answers
# (`async_reads`).
WAIT_SECONDS = 5.0
REPLICA_WAIT_SECONDS = 1.0
# How long closing a loop's pools waits for their worker task to stop.
CLOSE_SECONDS = 2.0


class _LoopPools:
    """One event loop's pools, one per database (the primary, and each read replica the reads
    have used), at most `MEMORY_STORE_POOL_SIZE` connections each, none kept open beyond use
    of the loop: `min_size=0`, opened in the calling task.

    A pool runs a worker task (it connects, and replaces a connection returned broken). When
    the loop shuts down (`asyncio.run`, pytest-asyncio, `asyncio.Runner` cancel every task),
    that worker swallows its cancellation (psycopg_pool's async worker catches
    CancelledError), so the loop would wait on it forever unless the pool is closed:
    `_close_at_loop_end` does it from a task of its own that the same shutdown cancels.
    `pool.close()` there may end in the other workers' CancelledError before it closed the
    idle connections, so every connection a pool opened is also kept here (weakly, through
    `configure`) and closed by hand."""

    def __init__(self) -> None:
        self.pools: dict[str, Any] = {}
        self.opened: weakref.WeakSet[Any] = weakref.WeakSet()
        # The resident connections (FASTPATH_STORE_RESIDENT_CONNECTION): per database, one idle
        # connection checked out of its pool and kept by the loop with its cursor (one task at
        # a time has the connection; a new cursor per statement, `conn.execute`, costs ~20 µs
        # more) and when it expires (the pool's max_lifetime, counted from when it was first
        # kept). Calls waiting for the pool are counted: a connection given back while one
        # waits goes to the pool.
        self.resident: dict[str, tuple[Any, Any]] = {}
        self.waiting: dict[str, int] = {}
        self.expires: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()

    async def pool(self, alias: str) -> Any:
        pool = self.pools.get(alias)
        if pool is not None and not pool.closed:
            return pool
        from psycopg_pool import AsyncConnectionPool

        async def keep(conn: Any) -> None:
            self.opened.add(conn)

        pool = AsyncConnectionPool(
            kwargs={
                **_conninfo(alias),
                "autocommit": True,
                # Behind a transaction-mode pooler nothing is prepared (pgbouncer 1.18 cannot
                # carry a prepared statement from one transaction to the next).
                "prepare_threshold": None if settings.DATABASE_POOLER else 5,
            },
            min_size=0,
            max_size=max(1, settings.MEMORY_STORE_POOL_SIZE),
            open=False,
            configure=keep,
            name=f"memoryadmin-store-{alias}",
            timeout=WAIT_SECONDS if alias == replicas.PRIMARY else REPLICA_WAIT_SECONDS,
            num_workers=1,
        )
        # Opening takes the pool's lock, free here: it does not yield, so no other task of the
        # loop can see the pool before it is open.
        await pool.open()
        self.pools[alias] = pool
        return pool

    async def take(self, alias: str) -> tuple[Any, Any]:
        """A connection for one call, and its kept cursor: the loop's resident connection when
        it is idle, else one of the pool's (and no cursor)."""
        held = self.resident.pop(alias, None)
        if held is not None:
            return held
        pool = await self.pool(alias)
        self.waiting[alias] = self.waiting.get(alias, 0) + 1
        try:
            conn = await pool.getconn()
        finally:
            self.waiting[alias] -= 1
        return conn, None

    async def give(self, alias: str, conn: Any, cursor: Any = None) -> None:
        """The call's connection back: kept as the loop's resident one (with `cursor`, or a new
        one) when it is idle, healthy, not past its lifetime, none is kept yet and no call waits
        for the pool; else to the pool (which rolls back a transaction left open, closes one
        left inside a statement or broken, and replaces it)."""
        import psycopg

        pool = self.pools.get(alias)
        if pool is None:  # closed meanwhile (`close_pools`): nothing will reuse it
            await conn.close()
            return
        if (
            alias not in self.resident
            and not self.waiting.get(alias)
            and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            and fastpath_enabled(RESIDENT)
        ):
            now = time.monotonic()
            expires = self.expires.get(conn)
            if expires is None:
                expires = self.expires[conn] = now + pool.max_lifetime
            if now < expires:
                self.resident[alias] = (conn, cursor if cursor is not None else conn.cursor())
                return
        await pool.putconn(conn)

    async def close(self, *, loop_ending: bool = False) -> None:
        # The resident connections are checked out of their pools: closed by hand below.
        self.resident.clear()
        self.expires = weakref.WeakKeyDictionary()
        pools, self.pools = list(self.pools.values()), {}
        for pool in pools:
            if loop_ending:
                with suppress(asyncio.CancelledError):  # the pool's own, cancelled, worker
                    await pool.close(timeout=CLOSE_SECONDS)
            else:
                await pool.close(timeout=CLOSE_SECONDS)
        for conn in list(self.opened):
            await conn.close()  # no round trip: psycopg just closes the socket


# Keyed weakly by the loop, and nothing in a value refers to its loop: a loop that is dropped
# takes its entry with it.
_natives: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopPools] = (
    weakref.WeakKeyDictionary()
)
_watchers: set[asyncio.Task[None]] = set()  # tasks must be referenced while they wait


def _conninfo(alias: str = "default") -> dict[str, Any]:
    """Django's own connection settings (`replicas.conninfo`), with the session's zone as a
    startup option: a pooler refuses startup options (pgbouncer); its server's zone applies."""
    if settings.DATABASE_POOLER:
        return replicas.conninfo(alias)
    return {**replicas.conninfo(alias), "options": "-c TimeZone=UTC"}


async def _close_at_loop_end(natives: _LoopPools) -> None:
    """Waits until the loop shuts down (its tasks are cancelled), then closes its pools."""
    try:
        await asyncio.get_running_loop().create_future()
    finally:
        await natives.close(loop_ending=True)
        await positions.close_loop()


def _loop_pools() -> _LoopPools:
    loop = asyncio.get_running_loop()
    natives = _natives.get(loop)
    if natives is None:
        natives = _natives[loop] = _LoopPools()
        watcher = loop.create_task(_close_at_loop_end(natives), name="memoryadmin-store-close")
        _watchers.add(watcher)
        watcher.add_done_callback(_watchers.discard)
    return natives


async def close_pools() -> None:
    """Close this event loop's connections now. A host that ends its loop some other way than
    by cancelling its tasks (`loop.close()` straight after `run_until_complete`) calls it, or
    `DjangoMemoryStore.aclose()`, first; `asyncio.run` and pytest-asyncio need neither."""
    natives = _natives.pop(asyncio.get_running_loop(), None)
    if natives is not None:
        await natives.close()
    await positions.close_loop()


@asynccontextmanager
async def connection(alias: str = "default") -> AsyncIterator[Any]:
    """A connection of this loop's pool, back to it when the call ends: a transaction left open
    is rolled back there, a connection left inside a statement (a cancelled call) or broken is
    closed and replaced."""
    natives = _loop_pools()
    conn, cursor = await natives.take(alias)
    try:
        yield conn
    finally:
        await natives.give(alias, conn, cursor)


async def fetch_on(alias: str, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A read; on a kept connection the server dropped (a restart, a failover) it goes back to
    the pool, which replaces it, and the read runs once more (a multi-host URL points the new
    connection at the new primary)."""
    import psycopg

    attempts = max(1, settings.MEMORY_STORE_POOL_SIZE) + 1  # every idle one may be stale
    natives = _loop_pools()
    for attempt in range(attempts):
        # `connection()` spelled out: no context manager's generator on the hot path.
        conn, cursor = await natives.take(alias)
        try:
            if cursor is None:
                cursor = await conn.execute(sql, params)
            else:
                await cursor.execute(sql, params)
            return await cursor.fetchall()
        except psycopg.OperationalError:
            if attempt == attempts - 1 or not conn.broken:
                raise
        finally:
            await natives.give(alias, conn, cursor)
    raise AssertionError("unreachable")
