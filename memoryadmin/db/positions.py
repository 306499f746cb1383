"""The travellers' last write positions, in the shared Redis (`CACHE_URL`), for read-your-writes
(`replicas.py`). Why not Django's cache API: a read needs the position in the same round trip as
a check that the map was not lost, and the round trip can be split (sent before the replica's
query, answered after it) so that the two overlap; a write must only ever move a position forward.
Both are Lua scripts on a connection of this module's own (one per thread, a few per event loop),
through redis-py's public API (`ConnectionPool.from_url`, `send_packed_command`, `read_response`).

Positions are fixed-width hex (16 digits) so the scripts compare them exactly (two 32-bit
halves: a Lua number cannot hold 64 bits).

Redis keeps nothing on disk: a restart (or FLUSHDB) loses every position, and a reader could then
pick a replica that has not replayed a write made just before. So the map has a start time (the
sentinel key, Redis's own clock, set with SET NX by the first script that finds it missing), read
in the same script as the positions; while it is younger than `window()` (the most a usable
replica can be behind, plus the age of a process's look at it, plus a second for rounding) no
position can be trusted and the answer is "ask the primary" (`None`). A write committed before the
restart is older than the sentinel, so once the window has passed every replica the router may
use has replayed it (a replica further behind is skipped by its look)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import weakref
from typing import Any

from django.conf import settings
from redis.exceptions import NoScriptError, ResponseError

from memoryadmin.db.redis import CACHE_ERRORS, shared_cache_failed, shared_cache_up

from . import position_watch

KEY_PREFIX = "memoryadmin:rw-lsn:"
SENTINEL = "memoryadmin:rw-lsn-started"
position_watch.forget_all_on(SENTINEL)
WHAT = "read-your-writes"
_IDLE_PER_LOOP = 8  # async connections kept per event loop (more in flight are closed after use)

# later(a, b): a is past b, both 16 hex digits.
_LATER = """
local function later(a, b)
  local ah, bh = tonumber(string.sub(a, 1, 8), 16), tonumber(string.sub(b, 1, 8), 16)
  if ah ~= bh then return ah > bh end
  return tonumber(string.sub(a, 9, 16), 16) > tonumber(string.sub(b, 9, 16), 16)
end
"""

# KEYS[1]: the sentinel; KEYS[2..]: positions; ARGV[1]: the window in seconds. Answers the
# highest position ('' for none), or 'y' while the map is younger than the window (or was
# missing: started now). One bulk string: the cheapest reply to parse.
READ_SCRIPT = (
    _LATER
    + """
local now = tonumber(redis.call('TIME')[1])
local started = redis.call('GET', KEYS[1])
if not started then
  redis.call('SET', KEYS[1], now, 'NX')
  return 'y'
end
if now - tonumber(started) < tonumber(ARGV[1]) then return 'y' end
local best = ''
for i = 2, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v and (best == '' or later(v, best)) then best = v end
end
return best
"""
)

# KEYS[1]: the sentinel; KEYS[2..]: positions; ARGV[1]: the position, ARGV[2]: the TTL. A key
# already past the position keeps its value (another writer's later commit), its TTL renewed.
WRITE_SCRIPT = (
    _LATER
    + """
redis.call('SET', KEYS[1], redis.call('TIME')[1], 'NX')
for i = 2, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v and not later(ARGV[1], v) then
    redis.call('EXPIRE', KEYS[i], ARGV[2])
  else
    redis.call('SET', KEYS[i], ARGV[1], 'EX', ARGV[2])
  end
end
return 1
"""
)

_READ_SHA = hashlib.sha1(READ_SCRIPT.encode()).hexdigest()  # noqa: S324 - Redis's script id
_WRITE_SHA = hashlib.sha1(WRITE_SCRIPT.encode()).hexdigest()  # noqa: S324


def in_redis() -> bool:
    """The positions live in Redis (else in Django's process-local cache: one process)."""
    return bool(settings.CACHE_URL)


def encode(lsn: int) -> str:
    return f"{lsn:016x}"


def window() -> float:
    """How old the map must be before its positions are trusted."""
    return settings.DATABASE_REPLICA_MAX_LAG_SECONDS + settings.DATABASE_REPLICA_CHECK_SECONDS + 1


def _keys(keys: tuple[str, ...]) -> list[str]:
    return [SENTINEL, *(KEY_PREFIX + k for k in keys)]


def _packed(*args: str | int) -> bytes:
    """A command in Redis's wire format: built here once per read, not by redis-py's general
    encoder (a measurable part of the read's cost)."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = str(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


# After a write of positions, one more round trip before the write counts as recorded: Redis
# answers it in a later turn of its loop than the write, so by then it has sent the write's
# invalidation messages to every process's watch (`position_watch`), and a reader anywhere
# that hears of this write afterwards finds the message already there.
_SETTLE = _packed("PING")


def _read_command(script_or_sha: str, names: list[str], verb: str = "EVALSHA") -> bytes:
    return _packed(verb, script_or_sha, len(names), *names, f"{window():g}")


def _decide(reply: bytes) -> int | None:
    """The needed position from the read script's answer; None while the map is too young."""
    if reply == b"y":
        return None
    return int(reply, 16) if reply else 0


def _options() -> dict[str, Any]:
    return {"socket_connect_timeout": 2, "socket_timeout": 2}


# --- one connection per thread ------------------------------------------------------------------

_local = threading.local()
_pools: dict[tuple[int, str], Any] = {}


def _connection() -> Any:
    conn = getattr(_local, "conn", None)
    if conn is None or _local.pid != os.getpid():  # a forked child: the parent's socket
        import redis

        key = (os.getpid(), settings.CACHE_URL)
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = redis.ConnectionPool.from_url(settings.CACHE_URL, **_options())
        conn = pool.make_connection()
        _local.conn, _local.pid = conn, os.getpid()
    return conn


def _failed(conn: Any, exc: BaseException) -> None:
    conn.disconnect()  # whatever was in flight on it is gone with it
    shared_cache_failed(WHAT, exc)


class Known:
    """The answer this process already had (`position_watch`): no round trip."""

    __slots__ = ("known",)

    def __init__(self, known: int) -> None:
        self.known: int | None = known

    def answer(self) -> int:
        return self.known  # type: ignore[return-value]


class Pending:
    """A read of positions sent, not yet answered: `answer()` reads the reply (always call it,
    even when the answer no longer matters, so the connection is left clean)."""

    __slots__ = ("conn", "keys", "ticket", "tracked")
    known = None

    def __init__(
        self, conn: Any, keys: list[str], ticket: position_watch.Ticket | None, tracked: bool
    ) -> None:
        self.conn = conn
        self.keys = keys
        self.ticket = ticket
        self.tracked = tracked  # a CLIENT TRACKING went first: its reply comes first

    def answer(self) -> int | None:
        """The highest position of the keys (0: none); None: ask the primary (Redis failed, or
        the map is younger than `window()`)."""
        conn, ticket = self.conn, self.ticket
        try:
            if self.tracked:
                try:
                    conn.read_response()
                except ResponseError:  # the watch went away since: not kept
                    ticket = None
            try:
                reply = conn.read_response()
            except NoScriptError:  # Redis restarted since the script was loaded
                conn.send_packed_command([_read_command(READ_SCRIPT, self.keys, "EVAL")])
                reply = conn.read_response()
        except CACHE_ERRORS as exc:
            _failed(conn, exc)
            return None
        return _learned(conn, ticket, self.keys, _decide(reply))


def _learned(
    conn: Any, ticket: position_watch.Ticket | None, names: list[str], needed: int | None
) -> int | None:
    """`needed`, kept by the watch when the read was tracked to it (one key, map trusted)."""
    if ticket is not None and needed is not None and position_watch.still_tracking(conn, ticket):
        position_watch.learn(ticket, tuple(names[1:]), needed)
    return needed


def ask(keys: tuple[str, ...]) -> Pending | Known | None:
    """Send the read of these keys' positions (or answer from what this process knows); None
    if Redis is resting or the send failed."""
    if not shared_cache_up():
        return None
    names = _keys(keys)
    known, ticket = position_watch.lookup(tuple(names[1:]))
    if known is not None:
        return Known(known)
    conn = _connection()
    try:
        if ticket is not None:
            conn.connect()  # a (re)connect forgets the tracking: before deciding to send it
        prefix = position_watch.tracking_prefix(conn, ticket)
        conn.send_packed_command([prefix + _read_command(_READ_SHA, names)])
    except CACHE_ERRORS as exc:
        _failed(conn, exc)
        return None
    return Pending(conn, names, ticket, bool(prefix))


def needed(keys: tuple[str, ...]) -> int | None:
    """`ask(keys).answer()` in one go."""
    pending = ask(keys)
    return None if pending is None else pending.answer()


def store(keys: tuple[str, ...], lsn: int) -> bool:
    """Move these keys' positions forward to `lsn` (never back), with the TTL. False if Redis
    could not be written."""
    if not shared_cache_up():
        return False
    conn = _connection()
    names = _keys(keys)
    args = (len(names), *names, encode(lsn), settings.DATABASE_READ_YOUR_WRITES_SECONDS)
    try:
        try:
            conn.send_command("EVALSHA", _WRITE_SHA, *args)
            conn.read_response()
        except NoScriptError:
            conn.send_command("EVAL", WRITE_SCRIPT, *args)
            conn.read_response()
        if position_watch.enabled():  # see _SETTLE
            conn.send_packed_command([_SETTLE])
            conn.read_response()
    except CACHE_ERRORS as exc:
        _failed(conn, exc)
        return False
    position_watch.forget(tuple(names[1:]))
    return True


def reset() -> None:
    """Close this thread's connection (tests)."""
    conn = getattr(_local, "conn", None)
    if conn is not None:
        conn.disconnect()
        _local.conn = None
    position_watch.reset()


# --- a few connections per event loop -----------------------------------------------------------


class _LoopRedis:
    """One event loop's connections: a task takes one for its read's round trip (sent before the
    replica's query, answered after it), so two tasks never read each other's reply."""

    def __init__(self) -> None:
        from redis.asyncio import ConnectionPool

        self.pool = ConnectionPool.from_url(settings.CACHE_URL, **_options())
        self.idle: list[Any] = []

    def take(self) -> Any:
        return self.idle.pop() if self.idle else self.pool.make_connection()

    async def give_back(self, conn: Any) -> None:
        if len(self.idle) < _IDLE_PER_LOOP:
            self.idle.append(conn)
        else:
            await conn.disconnect()

    async def close(self) -> None:
        idle, self.idle = self.idle, []
        for conn in idle:
            await conn.disconnect()


_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopRedis] = (
    weakref.WeakKeyDictionary()
)


def _loop_redis() -> _LoopRedis:
    loop = asyncio.get_running_loop()
    mine = _loops.get(loop)
    if mine is None:
        mine = _loops[loop] = _LoopRedis()
    return mine


async def _failed_async(conn: Any, exc: BaseException) -> None:
    await conn.disconnect()
    shared_cache_failed(WHAT, exc)


class KnownAsync(Known):
    async def answer(self) -> int:  # type: ignore[override]
        return self.known  # type: ignore[return-value]


class PendingAsync:
    """`Pending` for an event loop: `await answer()` (always), which gives the connection back."""

    __slots__ = ("conn", "keys", "owner", "ticket", "tracked")
    known = None

    def __init__(
        self,
        owner: _LoopRedis,
        conn: Any,
        keys: list[str],
        ticket: position_watch.Ticket | None,
        tracked: bool,
    ) -> None:
        self.owner = owner
        self.conn = conn
        self.keys = keys
        self.ticket = ticket
        self.tracked = tracked

    async def answer(self) -> int | None:
        conn, ticket = self.conn, self.ticket
        try:
            if self.tracked:
                try:
                    await conn.read_response()
                except ResponseError:  # the watch went away since: not kept
                    ticket = None
            try:
                reply = await conn.read_response()
            except NoScriptError:
                await conn.send_packed_command([_read_command(READ_SCRIPT, self.keys, "EVAL")])
                reply = await conn.read_response()
        except CACHE_ERRORS as exc:
            await _failed_async(conn, exc)
            return None
        except BaseException:  # cancelled mid-read: the reply may still come; drop the socket
            await conn.disconnect()
            raise
        needed = _learned(conn, ticket, self.keys, _decide(reply))
        await self.owner.give_back(conn)
        return needed


async def ask_async(keys: tuple[str, ...]) -> PendingAsync | KnownAsync | None:
    if not shared_cache_up():
        return None
    names = _keys(keys)
    known, ticket = position_watch.lookup(tuple(names[1:]))
    if known is not None:
        return KnownAsync(known)
    owner = _loop_redis()
    conn = owner.take()
    try:
        if ticket is not None:
            await conn.connect()  # a (re)connect forgets the tracking: before deciding to send it
        prefix = position_watch.tracking_prefix(conn, ticket)
        await conn.send_packed_command([prefix + _read_command(_READ_SHA, names)])
    except CACHE_ERRORS as exc:
        await _failed_async(conn, exc)
        return None
    return PendingAsync(owner, conn, names, ticket, bool(prefix))


async def store_async(keys: tuple[str, ...], lsn: int) -> bool:
    if not shared_cache_up():
        return False
    owner = _loop_redis()
    conn = owner.take()
    names = _keys(keys)
    args = (len(names), *names, encode(lsn), settings.DATABASE_READ_YOUR_WRITES_SECONDS)
    try:
        try:
            await conn.send_command("EVALSHA", _WRITE_SHA, *args)
            await conn.read_response()
        except NoScriptError:
            await conn.send_command("EVAL", WRITE_SCRIPT, *args)
            await conn.read_response()
        if position_watch.enabled():  # see _SETTLE
            await conn.send_packed_command([_SETTLE])
            await conn.read_response()
    except CACHE_ERRORS as exc:
        await _failed_async(conn, exc)
        return False
    except BaseException:
        await conn.disconnect()
        raise
    position_watch.forget(tuple(names[1:]))
    await owner.give_back(conn)
    return True


async def close_loop() -> None:
    """Close this event loop's connections (the store calls it when the loop ends)."""
    mine = _loops.pop(asyncio.get_running_loop(), None)
    if mine is not None:
        await mine.close()
