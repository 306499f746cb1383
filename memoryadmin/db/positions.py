"""The travellers' last write positions, in the shared Redis (`CACHE_URL`), for read-your-writes
(`replicas.py`). Why not Django's cache API: a read needs the position in the same round trip as
a check that the map was not lost, and a write must only ever move a position forward. Both are
Lua scripts (`register_script`) on the clients of `redis.py`: `client()` for Django's threads,
`async_client()` for the store's event loops. A read this process may keep (`redis_watch`) goes
in a pipeline after `CLIENT TRACKING ... REDIRECT` to the watch.

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

from typing import Any

from django.conf import settings
from redis.exceptions import NoScriptError

from . import redis_watch
from .redis import (
    CACHE_ERRORS,
    async_client,
    async_client_close,
    client,
    clients_reset,
    shared_cache_failed,
    shared_cache_up,
)

KEY_PREFIX = "memoryadmin:rw-lsn:"
SENTINEL = "memoryadmin:rw-lsn-started"
redis_watch.forget_all_on(SENTINEL)
WHAT = "read-your-writes"

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


def in_redis() -> bool:
    """The positions live in Redis (else in Django's process-local cache: one process)."""
    return bool(settings.CACHE_URL)


def encode(lsn: int) -> str:
    return f"{lsn:016x}"


def window() -> float:
    """How old the map must be before its positions are trusted."""
    return settings.DATABASE_REPLICA_MAX_LAG_SECONDS + settings.DATABASE_REPLICA_CHECK_SECONDS + 1


def names(keys: tuple[str, ...]) -> tuple[str, ...]:
    """The Redis keys of these positions (what the watch knows them by)."""
    return tuple(KEY_PREFIX + k for k in keys)


def _decide(reply: bytes) -> int | None:
    """The needed position from the read script's answer; None while the map is too young."""
    if reply == b"y":
        return None
    return int(reply, 16) if reply else 0


# --- the scripts (redis-py's Script: EVALSHA, loaded again on NOSCRIPT), made once per process
# for sync clients and once for async ones, and run on the caller's client.

_registered: dict[bool, tuple[Any, Any]] = {}


def _scripts_of(redis_client: Any, *, is_async: bool) -> tuple[Any, Any]:
    found = _registered.get(is_async)
    if found is None:
        read = redis_client.register_script(READ_SCRIPT)
        write = redis_client.register_script(WRITE_SCRIPT)
        found = _registered[is_async] = (read, write)
    return found


def _read_args(keys: tuple[str, ...]) -> tuple[list[str], list[str]]:
    return [SENTINEL, *names(keys)], [f"{window():g}"]


def _write_args(keys: tuple[str, ...], lsn: int) -> tuple[list[str], list[Any]]:
    return [SENTINEL, *names(keys)], [encode(lsn), settings.DATABASE_READ_YOUR_WRITES_SECONDS]


def lookup(keys: tuple[str, ...]) -> tuple[int | None, redis_watch.Ticket | None]:
    """What this process already knows of these keys (`redis_watch.lookup`)."""
    return redis_watch.lookup(names(keys))


def keep(ticket: redis_watch.Ticket | None, keys: tuple[str, ...], position: int | None) -> None:
    """Keep a position read with `ticket` in this process's copy (the router said it may)."""
    if ticket is not None and position is not None:
        redis_watch.learn(ticket, names(keys), position)


# After a write of positions, one more round trip (SETTLE: a PING) before the write counts as
# recorded: Redis answers it in a later turn of its loop than the write, so by then it has sent
# the write's invalidation messages to every process's watch (`redis_watch`), and a reader
# anywhere that hears of this write afterwards finds the message already there.

# --- Django's threads ---------------------------------------------------------------------------


def needed(keys: tuple[str, ...], ticket: redis_watch.Ticket | None = None) -> int | None:
    """The highest position of the keys (0: none); None: ask the primary (Redis failed, or the
    map is younger than `window()`). With a ticket, the read tracks to the watch."""
    if not shared_cache_up():
        return None
    redis_client = client()
    read, _ = _scripts_of(redis_client, is_async=False)
    script_keys, args = _read_args(keys)
    try:
        if ticket is None:
            return _decide(read(keys=script_keys, args=args, client=redis_client))
        try:
            return _decide(_tracked_read(redis_client, read, script_keys, args, ticket))
        except NoScriptError:  # Redis restarted since the script was loaded: load it
            redis_client.script_load(READ_SCRIPT)
            return _decide(_tracked_read(redis_client, read, script_keys, args, ticket))
    except CACHE_ERRORS as exc:
        shared_cache_failed(WHAT, exc)
        return None


def _tracked_reply(replies: list[Any], script_keys: list[str]) -> bytes:
    """The read's reply from its pipeline. If the tracking was refused (the watch went away
    since the ticket: its client id is gone) the keys are marked touched, so the answer is not
    kept; the read itself still counts."""
    tracked, reply = replies
    if isinstance(tracked, Exception):
        redis_watch.forget(tuple(script_keys[1:]))
    if isinstance(reply, Exception):
        raise reply
    return reply


def _tracked_read(
    redis_client: Any, read: Any, script_keys: list[str], args: list[str], ticket: Any
) -> bytes:
    pipe = redis_client.pipeline(transaction=False)
    pipe.execute_command(*redis_watch.tracking(ticket))
    pipe.evalsha(read.sha, len(script_keys), *script_keys, *args)
    return _tracked_reply(pipe.execute(raise_on_error=False), script_keys)


def store(keys: tuple[str, ...], lsn: int) -> bool:
    """Move these keys' positions forward to `lsn` (never back), with the TTL. False if Redis
    could not be written."""
    if not shared_cache_up():
        return False
    redis_client = client()
    _, write = _scripts_of(redis_client, is_async=False)
    script_keys, args = _write_args(keys, lsn)
    try:
        write(keys=script_keys, args=args, client=redis_client)
        if redis_watch.enabled():  # see SETTLE
            redis_client.ping()
    except CACHE_ERRORS as exc:
        shared_cache_failed(WHAT, exc)
        return False
    redis_watch.forget(names(keys))
    return True


def reset() -> None:
    """Close this process's connections and the watch (tests: Redis stopped or restarted)."""
    clients_reset()
    redis_watch.reset()


# --- the store's event loops --------------------------------------------------------------------


async def needed_async(
    keys: tuple[str, ...], ticket: redis_watch.Ticket | None = None
) -> int | None:
    """`needed` on the running event loop's client."""
    if not shared_cache_up():
        return None
    redis_client = async_client()
    read, _ = _scripts_of(redis_client, is_async=True)
    script_keys, args = _read_args(keys)
    try:
        if ticket is None:
            return _decide(await read(keys=script_keys, args=args, client=redis_client))
        try:
            return _decide(await _tracked_read_async(redis_client, read, script_keys, args, ticket))
        except NoScriptError:
            await redis_client.script_load(READ_SCRIPT)
            return _decide(await _tracked_read_async(redis_client, read, script_keys, args, ticket))
    except CACHE_ERRORS as exc:
        shared_cache_failed(WHAT, exc)
        return None


async def _tracked_read_async(
    redis_client: Any, read: Any, script_keys: list[str], args: list[str], ticket: Any
) -> bytes:
    pipe = redis_client.pipeline(transaction=False)
    pipe.execute_command(*redis_watch.tracking(ticket))
    pipe.evalsha(read.sha, len(script_keys), *script_keys, *args)
    return _tracked_reply(await pipe.execute(raise_on_error=False), script_keys)


async def store_async(keys: tuple[str, ...], lsn: int) -> bool:
    if not shared_cache_up():
        return False
    redis_client = async_client()
    _, write = _scripts_of(redis_client, is_async=True)
    script_keys, args = _write_args(keys, lsn)
    try:
        await write(keys=script_keys, args=args, client=redis_client)
        if redis_watch.enabled():  # see SETTLE
            await redis_client.ping()
    except CACHE_ERRORS as exc:
        shared_cache_failed(WHAT, exc)
        return False
    redis_watch.forget(names(keys))
    return True


async def close_loop() -> None:
    """Close the running loop's Redis connections (the store's loop is ending)."""
    await async_client_close()
