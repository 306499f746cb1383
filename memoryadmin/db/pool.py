"""The native async psycopg connections of `DjangoMemoryStore`: a few per event loop, all closed
when that loop ends, so a host calling `asyncio.run(...)` per request leaks nothing and no
loop's shutdown waits on them (docs/ARCHITECTURE.md, "The agent's hot path").
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

from django.conf import settings
from psycopg.pq import TransactionStatus

from . import positions, replicas

_IDLE = TransactionStatus.IDLE
_ROLLBACK = (TransactionStatus.INTRANS, TransactionStatus.INERROR)


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
async def connection(alias: str = "default") -> AsyncIterator[Any]:
    """A connection of this loop's, back to it (or closed) when the call ends."""
    native = _native(alias)
    conn = await native.acquire()
    try:
        yield conn
    finally:
        await native.release(conn)


async def fetch_on(alias: str, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A read; on a kept connection the server dropped (a restart, a failover) it is closed and
    the read runs once more on a new one (which a multi-host URL points at the new primary)."""
    import psycopg

    attempts = max(1, settings.MEMORY_STORE_POOL_SIZE) + 1  # every idle one may be stale
    for attempt in range(attempts):
        async with connection(alias) as conn:
            try:
                cursor = await conn.execute(sql, params)
                return await cursor.fetchall()
            except psycopg.OperationalError:
                if attempt == attempts - 1 or not conn.broken:
                    raise
    raise AssertionError("unreachable")
