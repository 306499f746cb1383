"""This process's copy of the travellers' write positions it has read, kept true by Redis's
client-side caching (`CLIENT TRACKING`), so that reading a traveller again costs no round trip.
Why: that round trip was the whole cost of the replica router (bench/RESULTS.md, "Read
replicas"), and the agent reads the same traveller several times in a conversation.

How it stays true. Each process keeps one socket, the watch, that Redis sends its invalidation
messages to (RESP3 pushes). Every connection `positions` reads through turns tracking on,
redirected to the watch, in the same packet as its first read (`tracking_prefix`). Redis then
remembers each key that connection read and, when the key changes (a write's script, its TTL
running out, a flush), pushes the key's name to the watch, before it answers the writer. Every
lookup first reads what the watch holds (one non-blocking `recv`) and forgets those keys. So a
write acknowledged before a lookup begins is seen, provided Redis's message to this host got
here before the request that followed the acknowledgement: Redis sends it first, so only a
network that reorders the two (a lost packet on this host's link) opens a window, which the
liveness bound below caps. A position learned from a read is kept only if no invalidation of its
key (nor a forget-all) came after the read was sent (`Ticket`), so a reply that raced a write is
not kept.

When the copy is not used (every lookup then asks Redis, as without the watch): the watch cannot
be made (Redis away: `sharedcache` rests it), its socket closed or failed (Redis restarted or
stopped; everything known is forgotten), a flush or the map's start time (`positions.SENTINEL`,
`forget_all_on`) changed (forget everything), and liveness: the watch sends a PING at most
every half of `DATABASE_REPLICA_POSITION_WATCH_SECONDS` and the copy is used only while the last
PONG is younger than that, so a Redis host that vanishes without closing the socket stops it within
that time. `DATABASE_REPLICA_POSITION_WATCH_SECONDS = 0` turns the watch off.

The copy holds positions only once the map is older than `positions.window()` (a read the map's
youth sent to the primary is not learned). Plain TCP or a Unix socket only: a `rediss://` cache
gets no watch.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

import hiredis
from django.conf import settings

from memoryadmin.db.redis import shared_cache_failed, shared_cache_up

WHAT = "read-your-writes watch"
MAX_KNOWN = 100_000  # positions kept; past that the copy starts again (forgetting is safe)
_PING = hiredis.pack_command(("PING",))
_FORGET_ALL: set[bytes] = set()  # keys whose change forgets everything (`forget_all_on`)


def forget_all_on(name: str) -> None:
    """A change of this key (the positions' start time) forgets every position known."""
    _FORGET_ALL.add(name.encode())


@dataclass(frozen=True)
class Ticket:
    """Taken before a read of positions is sent: which watch its connection tracks to, and the
    last invalidation seen then."""

    generation: int
    epoch: int
    client_id: int


class _Watch:
    __slots__ = ("sock", "reader", "client_id")

    def __init__(self, sock: socket.socket, reader: Any, client_id: int) -> None:
        self.sock = sock
        self.reader = reader
        self.client_id = client_id


_lock = threading.Lock()
_pid = 0
_watch: _Watch | None = None
_generation = 0  # one per watch made: connections re-point their tracking to a new one
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


def _address() -> tuple[int, Any, tuple[str, ...]] | None:
    """(family, address, HELLO's AUTH arguments) of CACHE_URL, or None (TLS: no watch)."""
    import redis

    pool = redis.ConnectionPool.from_url(settings.CACHE_URL)
    kwargs = pool.connection_kwargs
    if pool.connection_class is not redis.Connection and "path" not in kwargs:
        return None
    auth: tuple[str, ...] = ()
    if kwargs.get("password"):
        auth = ("AUTH", kwargs.get("username") or "default", kwargs["password"])
    if "path" in kwargs:
        return socket.AF_UNIX, kwargs["path"], auth
    return socket.AF_INET, (kwargs.get("host", "localhost"), int(kwargs.get("port", 6379))), auth


def _call(sock: socket.socket, reader: Any, *args: Any) -> Any:
    sock.sendall(hiredis.pack_command(args))
    while (reply := reader.gets()) is False:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("closed")
        reader.feed(data)
    if isinstance(reply, hiredis.ReplyError):
        raise ConnectionError("refused")
    return reply


def _make_locked(now: float) -> None:
    """A new watch (blocking, short timeouts): RESP3, so pushes need no SUBSCRIBE."""
    global _watch, _generation, _alive_until, _ping_sent_at
    where = _address()
    if where is None:
        return
    family, address, auth = where
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.settimeout(2)
        sock.connect(address)
        if family == socket.AF_INET:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = hiredis.Reader()
        _call(sock, reader, "HELLO", "3", *auth)
        client_id = int(_call(sock, reader, "CLIENT", "ID"))
        sock.setblocking(False)
    except (OSError, hiredis.ProtocolError) as exc:
        sock.close()
        shared_cache_failed(WHAT, exc)
        return
    _watch = _Watch(sock, reader, client_id)
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
        _watch.sock.close()
    _watch = None
    _forget_all_locked()
    if exc is not None:
        shared_cache_failed(WHAT, exc)


def _handle_locked(message: Any, now: float) -> None:
    global _epoch, _alive_until, _ping_sent_at
    if isinstance(message, list):  # a push (hiredis.PushNotification is a list)
        if len(message) < 2 or message[0] != b"invalidate":
            return
        keys = message[1]
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
    if message == b"PONG" and _ping_sent_at is not None:
        _alive_until = _ping_sent_at + _bound()
        _ping_sent_at = None
        return
    raise ConnectionError("unexpected reply on the watch")


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
        while True:
            try:
                data = watch.sock.recv(65536)
            except BlockingIOError:
                break
            if not data:
                raise ConnectionError("closed by Redis")
            watch.reader.feed(data)
        while (message := watch.reader.gets()) is not False:
            _handle_locked(message, now)
        if _ping_sent_at is None and _alive_until - now < bound / 2:
            watch.sock.send(_PING)  # 14 bytes on an idle socket: never blocks
            _ping_sent_at = now
    except (OSError, hiredis.ProtocolError) as exc:
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
            return None, Ticket(_generation, _epoch, _watch.client_id)


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


def tracking_prefix(conn: Any, ticket: Ticket | None) -> bytes:
    """The command that points `conn`'s tracking at the ticket's watch, to send before the read
    (b"" with no ticket, or if it already does). The connection forgets it on every (re)connect
    (`register_connect_callback`, redis-py's hook for key tracking)."""
    if ticket is None:
        return b""
    state = getattr(conn, "memoryadmin_tracking", None)
    if state is None:
        state = conn.memoryadmin_tracking = _Tracking()
        conn.register_connect_callback(state.connected)
    if state.generation == ticket.generation:
        return b""
    state.generation = ticket.generation
    return hiredis.pack_command(("CLIENT", "TRACKING", "ON", "REDIRECT", ticket.client_id))


def still_tracking(conn: Any, ticket: Ticket) -> bool:
    """The connection was not reconnected (tracking lost) since `tracking_prefix`."""
    state = getattr(conn, "memoryadmin_tracking", None)
    return state is not None and state.generation == ticket.generation


class _Tracking:
    __slots__ = ("generation", "__weakref__")

    def __init__(self) -> None:
        self.generation: int | None = None

    def connected(self, conn: Any) -> None:
        self.generation = None
