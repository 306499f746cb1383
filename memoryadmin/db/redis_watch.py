"""This process's copy of the travellers' write positions it has read, kept true by Redis's
client-side caching (`CLIENT TRACKING`), so that reading a traveller again costs no round trip.
Why: that round trip was the whole cost of the replica router (bench/RESULTS.md, "Read
replicas"), and the agent reads the same traveller several times in a conversation.

Why not redis-py's own client-side caching (`cache_config=CacheConfig(...)`, RESP3): it refuses
a server older than Redis 7.4 (Debian 12, which we deploy and test on, has 7.0), `redis.asyncio`
has no `cache_config` (the store's reads are async), and a cached read asks the server nothing,
so a Redis host that vanishes without closing its sockets would leave every process reading its
old copy for ever; the watch below bounds that by a PING.

How it stays true. Each process keeps one connection, the watch (redis-py's `Connection`, RESP2,
subscribed to `__redis__:invalidate`), that Redis sends its invalidation messages to. A read of
one traveller's position that this process does not know is sent in a pipeline after
`CLIENT TRACKING ON REDIRECT <the watch>` (`positions.py`), so whichever connection of the pool
carries it tracks to the watch. Redis then remembers each key that connection read and, when the
key changes (a write's script, its TTL running out, a flush), sends the key's name to the watch,
before it answers the writer. Every lookup first reads what the watch holds (`can_read(0)`, a
non-blocking poll) and forgets those keys. So a
write acknowledged before a lookup begins is seen, provided Redis's message to this host got
here before the request that followed the acknowledgement: Redis sends it first, so only a
network that reorders the two (a lost packet on this host's link) opens a window, which the
liveness bound below caps. A position learned from a read is kept only if no invalidation of its
key (nor a forget-all) came after the read was sent (`Ticket`), so a reply that raced a write is
not kept.

When the copy is not used (every lookup then asks Redis, as without the watch): the watch cannot
be made (Redis away: `redis.py` rests it), its socket closed or failed (Redis restarted or
stopped; everything known is forgotten), a flush or the map's start time (`positions.SENTINEL`,
`forget_all_on`) changed (forget everything), and liveness: the watch sends a PING at most
every half of `DATABASE_REPLICA_POSITION_WATCH_SECONDS` and the copy is used only while the last
PONG is younger than that, so a Redis host that vanishes without closing the socket stops it within
that time. `DATABASE_REPLICA_POSITION_WATCH_SECONDS = 0` turns the watch off.

The copy holds positions only once the map is older than `positions.window()` (a read the map's
youth sent to the primary is not learned).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings

from .redis import CACHE_ERRORS, options, shared_cache_failed, shared_cache_up

WHAT = "read-your-writes watch"
CHANNEL = "__redis__:invalidate"  # where Redis sends a redirected client's invalidations
MAX_KNOWN = 100_000  # positions kept; past that the copy starts again (forgetting is safe)
_FORGET_ALL: set[bytes] = set()  # keys whose change forgets everything (`forget_all_on`)


def forget_all_on(name: str) -> None:
    """A change of this key (the positions' start time) forgets every position known."""
    _FORGET_ALL.add(name.encode())


@dataclass(frozen=True)
class Ticket:
    """Taken before a read of positions is sent: which watch the read tracks to, and the last
    invalidation seen then."""

    generation: int
    epoch: int
    client_id: int


_lock = threading.Lock()
_pid = 0
_watch: Any = None  # redis-py's Connection, subscribed to CHANNEL
_client_id = 0
_generation = 0  # one per watch made: a position learned through an older one is not kept
_known: dict[str, int] = {}
_epoch = 0  # counts invalidations seen (and local forgets)
_touched: dict[str, int] = {}  # key -> epoch of its last invalidation
_cleared_at = 0  # epoch of the last forget-all
_alive_until = 0.0
_ping_sent_at: float | None = None


def enabled() -> bool:
    return _bound() > 0 and bool(settings.CACHE_URL)


def _bound() -> float:
    return settings.DATABASE_REPLICA_POSITION_WATCH_SECONDS


def _make_locked(now: float) -> None:
    """A new watch: its client id (what readers redirect their tracking to), then subscribed."""
    global _watch, _client_id, _generation, _alive_until, _ping_sent_at
    # RESP2: a subscribed RESP2 connection gets the invalidations as plain replies, which
    # redis-py's public `read_response` returns (in RESP3 they are pushes, handed to a hook of
    # its private parser).
    pool = redis.ConnectionPool.from_url(settings.CACHE_URL, protocol=2, **options())
    conn = pool.make_connection()
    try:
        conn.send_command("CLIENT", "ID")
        client_id = int(conn.read_response())
        conn.send_command("SUBSCRIBE", CHANNEL)
        conn.read_response()
    except CACHE_ERRORS as exc:
        conn.disconnect()
        shared_cache_failed(WHAT, exc)
        return
    _watch, _client_id = conn, client_id
    _generation += 1
    _forget_all_locked()
    _alive_until, _ping_sent_at = now + _bound(), None


def _forget_all_locked() -> None:
    global _epoch, _cleared_at
    _known.clear()
    _touched.clear()
    _epoch += 1
    _cleared_at = _epoch


def _lose_locked(exc: BaseException | None = None) -> None:
    global _watch
    if _watch is not None:
        _watch.disconnect()
    _watch = None
    _forget_all_locked()
    if exc is not None:
        shared_cache_failed(WHAT, exc)


def _handle_locked(message: Any) -> None:
    """One message on the watch: an invalidation (`[message, CHANNEL, keys]`, keys None for a
    flush) or the answer to its PING (`[pong, ""]`)."""
    global _epoch, _alive_until, _ping_sent_at
    kind = message[0] if isinstance(message, list) and message else None
    if kind == b"message" and len(message) == 3:
        keys = message[2]
        if keys is None or not _FORGET_ALL.isdisjoint(keys):  # a flush, or the map restarted
            _forget_all_locked()
            return
        _epoch += 1
        for key in keys:
            name = key.decode()
            _known.pop(name, None)
            _touched[name] = _epoch
        if len(_touched) > MAX_KNOWN:
            _forget_all_locked()
        return
    if kind == b"pong" and _ping_sent_at is not None:
        _alive_until = _ping_sent_at + _bound()
        _ping_sent_at = None
        return
    raise redis.ConnectionError("unexpected reply on the watch")


def _ready_locked() -> bool:
    """Read what the watch holds; True while the copy may be used."""
    global _pid, _watch, _ping_sent_at
    now = time.monotonic()
    if _pid != os.getpid():  # a forked child: the parent's socket is not ours
        _pid = os.getpid()
        _watch = None
        _forget_all_locked()
    if _watch is None:
        if not shared_cache_up():
            return False
        _make_locked(now)
        if _watch is None:
            return False
    watch, bound = _watch, _bound()
    try:
        while watch.can_read(timeout=0):
            _handle_locked(watch.read_response())
        if _ping_sent_at is None and _alive_until - now < bound / 2:
            watch.send_command("PING")  # a few bytes on an idle socket: never blocks
            _ping_sent_at = now
    except CACHE_ERRORS as exc:
        _lose_locked(exc)
        return False
    return now < _alive_until


def lookup(keys: tuple[str, ...]) -> tuple[int | None, Ticket | None]:
    """(The highest position this process knows for `keys`, full Redis key names, 0: none;
    None: ask Redis), and for a read of one key that must ask, the ticket to `learn` its answer
    with (None: no usable watch, the answer is not kept)."""
    if not enabled():
        return None, None
    with _lock:
        if not _ready_locked() or _watch is None:
            return None, None
        try:
            return max(_known[key] for key in keys), None
        except KeyError:
            if len(keys) != 1:
                return None, None
            return None, Ticket(_generation, _epoch, _client_id)


def learn(ticket: Ticket, keys: tuple[str, ...], position: int) -> None:
    """Keep a position read from Redis on a connection tracking to the ticket's watch; not if
    the watch changed or an invalidation of the key came after the ticket. The watch is not read
    here: an invalidation already waiting in it is applied by the next lookup, before any use."""
    if len(keys) != 1:
        return
    (key,) = keys
    with _lock:
        if _watch is None or ticket.generation != _generation:
            return
        if _cleared_at > ticket.epoch or _touched.get(key, -1) > ticket.epoch:
            return
        if len(_known) >= MAX_KNOWN:
            _forget_all_locked()
            return
        _known[key] = position


def forget(keys: tuple[str, ...]) -> None:
    """This process wrote these keys: drop them now, without waiting for Redis's message."""
    global _epoch
    with _lock:
        _epoch += 1
        for key in keys:
            _known.pop(key, None)
            _touched[key] = _epoch


def reset() -> None:
    """Close the watch and forget everything (tests)."""
    with _lock:
        _lose_locked()


def tracking(ticket: Ticket) -> tuple[str, ...]:
    """The command that points a connection's tracking at the ticket's watch: sent in the same
    pipeline as the read, so the connection that carries the read tracks it."""
    return ("CLIENT", "TRACKING", "ON", "REDIRECT", ticket.client_id)
