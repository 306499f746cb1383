"""Read replicas, and read-your-writes per traveller.

`DATABASE_REPLICA_URLS` names streaming standbys (aliases `replica1`, `replica2`...). Which reads
may go to one (docs/ARCHITECTURE.md, "Read replicas"):
- the agent's reads (`selectors.facts_for_agent`, `fact_for_agent`, `tier_one`, `facts_search`,
  `purge_generation`, and `DjangoMemoryStore`'s native reads): `read_alias(subject_id)`;
- the ORM reads of the record's apps (`ROUTED_APPS`) inside `replica_reads(...)`: the staff pages
  and the portal's pages open it for a GET (`staff/middleware.py`, `portal/auth.py`).
Everything else reads the primary: every write (`ReplicaRouter.db_for_write`), every read inside
a transaction on the primary (`in_atomic_block`), sign-in, sessions, service tokens, the portal's
sessions and links, the turns' status.

Read-your-writes: after a write for a traveller commits, `written(subject_id)` reads the
primary's WAL position (`pg_current_wal_lsn()`, after the commit, so at or past its commit
record) and keeps it in the shared cache for `DATABASE_READ_YOUR_WRITES_SECONDS`, under the
traveller's key. `read_alias` sends that traveller's reads to a replica only once it reports
`pg_last_wal_replay_lsn()` at or past that position (the decision: `routing.decide`, which this
module and `async_reads` drive); whoever reads next (another host, another
worker, the portal) sees the write. If the shared cache cannot be read, the read goes to the
primary; if it cannot be written, this process reads only from the primary for the same TTL.

A replica is looked at by each process at most once per `DATABASE_REPLICA_CHECK_SECONDS`, on a
plain psycopg connection of its own (one short statement, `SQL_REPLICA_STATE`); one that does
not answer, is not a standby, or whose replay is more than `DATABASE_REPLICA_MAX_LAG_SECONDS`
behind, is skipped until a later look finds it well.
"""

from __future__ import annotations

import contextvars
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import caches
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from psycopg.pq import TransactionStatus

from memoryadmin.db.redis import CACHE_ERRORS, shared_cache_failed

from . import positions, redis_watch, routing
from .sql import SQL_CURRENT_LSN, SQL_REPLICA_STATE

logger = logging.getLogger(__name__)

T = TypeVar("T")
_IDLE = TransactionStatus.IDLE
PRIMARY = DEFAULT_DB_ALIAS
# The apps whose ORM reads may go to a replica inside `replica_reads`. Not auth, sessions,
# the second factor, axes, the portal's sessions and links: who is signed in is the primary's.
ROUTED_APPS = frozenset({"facts", "usage", "extraction", "privacy", "access"})
_KEY_PREFIX = "ma:rw-lsn:"

# --- the replicas' state, per process -----------------------------------------------------------


@dataclass(frozen=True)
class ReplicaState:
    alias: str
    state: str  # "ok", "lagging", "down"
    replay_lsn: int | None
    lag_seconds: float | None
    checked_at: float

    @property
    def usable(self) -> bool:
        return self.state == "ok"


_states: dict[str, ReplicaState] = {}
_conns: dict[str, Any] = {}
_check_lock = threading.Lock()
_turn = itertools.count()
_pinned_until = 0.0  # this process could not record a write: primary only until then
_pid = os.getpid()


_LIBPQ_OPTIONS = frozenset(
    {
        "sslmode",
        "sslrootcert",
        "sslcert",
        "sslkey",
        "application_name",
        "target_session_attrs",
        "connect_timeout",
    }
)


def conninfo(alias: str) -> dict[str, Any]:
    """libpq keywords of a configured database (the test database's name included)."""
    params = connections[alias].settings_dict
    info = {
        "dbname": params["NAME"],
        "user": params.get("USER") or None,
        "password": params.get("PASSWORD") or None,
        "host": params.get("HOST") or None,
        "port": str(params["PORT"]) if params.get("PORT") else None,
    }
    # target_session_attrs: a libpq multi-host URL finds the primary (after a failover too).
    for name, value in params.get("OPTIONS", {}).items():
        if name in _LIBPQ_OPTIONS:
            info[name] = value
    return {name: value for name, value in info.items() if value is not None}


def _look(alias: str) -> ReplicaState:
    import psycopg

    now = time.monotonic()
    try:
        conn = _conns.get(alias)
        if conn is None or conn.closed or conn.broken:
            conn = psycopg.connect(**{"connect_timeout": 2, **conninfo(alias)}, autocommit=True)
            _conns[alias] = conn
        in_recovery, replay, lag = conn.execute(SQL_REPLICA_STATE, prepare=False).fetchone()
    except psycopg.Error as exc:
        conn = _conns.pop(alias, None)
        if conn is not None:
            conn.close()
        logger.warning("replica %s unreachable (%s): reads go elsewhere", alias, type(exc).__name__)
        return ReplicaState(alias, "down", None, None, now)
    if not in_recovery or replay is None:  # promoted, or not a standby: never read from it
        return ReplicaState(alias, "down", None, None, now)
    lag = float(lag)
    state = "ok" if lag <= settings.DATABASE_REPLICA_MAX_LAG_SECONDS else "lagging"
    return ReplicaState(alias, state, int(replay), lag, now)


def replica_states() -> list[ReplicaState]:
    """Each replica's last look, taken again when older than DATABASE_REPLICA_CHECK_SECONDS.
    One thread looks at a time; the others meanwhile use the last look (none yet: down)."""
    global _pid
    if os.getpid() != _pid:  # a forked child: the parent's connections are not ours
        _pid = os.getpid()
        _conns.clear()
        _states.clear()
    now = time.monotonic()
    period = settings.DATABASE_REPLICA_CHECK_SECONDS
    stale = [
        a
        for a in settings.DATABASE_REPLICAS
        if a not in _states or now - _states[a].checked_at >= period
    ]
    if stale and _check_lock.acquire(blocking=False):
        try:
            for alias in stale:
                _states[alias] = _look(alias)
        finally:
            _check_lock.release()
    return [
        _states.get(alias) or ReplicaState(alias, "down", None, None, 0.0)
        for alias in settings.DATABASE_REPLICAS
    ]


def mark_down(alias: str) -> None:
    """A read on this replica just failed: skip it until the next look."""
    _states[alias] = ReplicaState(alias, "down", None, None, time.monotonic())
    conn = _conns.pop(alias, None)
    if conn is not None:
        conn.close()


def on_replica_or_primary(alias: str, read: Callable[[str], T]) -> T:
    """`read(alias)`; if that is a replica and the read fails there (the replica went away since
    it was last looked at), the same read on the primary. Only outside a transaction, as every
    replica read is."""
    if alias == PRIMARY:
        return read(PRIMARY)
    try:
        return read(alias)
    except DatabaseError:
        logger.warning("a read on replica %s failed: read again on the primary", alias)
        mark_down(alias)
        connections[alias].close_if_unusable_or_obsolete()
        return read(PRIMARY)


# --- where a read goes --------------------------------------------------------------------------


def _key(name: str) -> str:
    return _KEY_PREFIX + name


def subject_key(subject_id: str) -> str:
    return "s:" + subject_id


def recorded(keys: tuple[str, ...], ticket: redis_watch.Ticket | None = None) -> int | None:
    """The highest write position recorded under `keys` (0: none); None if the shared cache
    cannot say (down, or its positions lost too recently: `positions.window()`)."""
    if not keys:
        return 0
    if positions.in_redis():
        return positions.needed(keys, ticket)
    try:  # no Redis: one process, Django's local cache
        found = caches["default"].get_many([_key(k) for k in keys])
    except CACHE_ERRORS as exc:
        shared_cache_failed("read-your-writes", exc)
        return None
    return max((int(v) for v in found.values()), default=0)


@dataclass(frozen=True, slots=True)
class Plan:
    """A routing decision under way (`route_start`): final, or waiting for the keys' position
    from Redis (`route_finish`)."""

    keys: tuple[str, ...]
    replicas: tuple[routing.Replica, ...]
    process: routing.Process
    route: routing.Route
    ticket: redis_watch.Ticket | None
    turn: int


def route_start(keys: tuple[str, ...], *, own_connection: bool = False) -> Plan:
    """`routing.decide` with what this process knows: its pin, a transaction open on the primary
    (unless the read has `own_connection`: the store's native reads), its replicas' last looks,
    and its own copy of the keys' position (`redis_watch`). If the plan's route still asks,
    read the position (with the plan's ticket) and call `route_finish`."""
    process = routing.Process(
        pinned=time.monotonic() < _pinned_until,
        in_transaction=not own_connection and primary_in_transaction(),
    )
    turn = next(_turn)
    if process.pinned or process.in_transaction:  # decided: no replica looked at
        return Plan(keys, (), process, routing.decide((), process), None, turn)
    states = tuple(
        routing.Replica(state.alias, state.replay_lsn, state.usable) for state in replica_states()
    )
    route = routing.decide(states, process, turn=turn)
    ticket = None
    if route.ask and positions.in_redis():
        known, ticket = positions.lookup(keys)
        if known is not None:
            process = routing.Process(known=known)
            route = routing.decide(states, process, turn=turn)
    return Plan(keys, states, process, route, ticket, turn)


def route_finish(plan: Plan, needed: int | None) -> str:
    """The alias for a plan that asked, given the position read from Redis (None: cannot
    tell); the position kept by this process when the decision says it may."""
    route = routing.decide(plan.replicas, plan.process, routing.Written(needed), turn=plan.turn)
    if route.keep and plan.ticket is not None:
        positions.keep(plan.ticket, plan.keys, needed)
    return route.alias or PRIMARY


def read_alias(*keys: str) -> str:
    """The database for a read of these travellers (`subject_key`) or other writers' keys: a
    replica that is up, close enough, and has replayed their last write; else the primary."""
    if not settings.DATABASE_REPLICAS:
        return PRIMARY
    plan = route_start(keys)
    if not plan.route.ask:
        return plan.route.alias or PRIMARY
    return route_finish(plan, recorded(keys, plan.ticket))


def subject_read(subject_id: str, read: Callable[[str], T]) -> T:
    """`read(alias)` for one traveller's agent read: on a replica that has replayed the
    traveller's last write (`read_alias`: what this process already knows of the traveller's
    position, else Redis), else the primary; if the replica fails, the primary answers. With no
    replica to try, Redis is not asked."""
    return on_replica_or_primary(read_alias(subject_key(subject_id)), read)


def primary_in_transaction() -> bool:
    """Inside a transaction on the primary (Django's `atomic`, or BEGIN sent by hand as
    `db.in_own_pipelined_transaction` does): its reads stay there."""
    db = connections[PRIMARY]
    if db.in_atomic_block:
        return True
    raw = db.connection
    return raw is not None and not raw.closed and raw.info.transaction_status != _IDLE


def subject_read_alias(subject_id: str) -> str:
    if not settings.DATABASE_REPLICAS:
        return PRIMARY
    return read_alias(subject_key(subject_id))


# --- after a write ------------------------------------------------------------------------------


def _pin() -> None:
    """This process could not record a write: it reads only from the primary for the TTL."""
    global _pinned_until
    _pinned_until = time.monotonic() + settings.DATABASE_READ_YOUR_WRITES_SECONDS


def _store(keys: tuple[str, ...], lsn: int) -> None:
    if positions.in_redis():
        if not positions.store(keys, lsn):
            _pin()
        return
    try:  # no Redis: one process, Django's local cache
        caches["default"].set_many(
            {_key(k): lsn for k in keys}, timeout=settings.DATABASE_READ_YOUR_WRITES_SECONDS
        )
    except CACHE_ERRORS as exc:
        shared_cache_failed("read-your-writes", exc)
        _pin()


def _record(keys: tuple[str, ...]) -> None:
    try:
        with connections[PRIMARY].cursor() as cursor:
            cursor.execute(SQL_CURRENT_LSN)
            (lsn,) = cursor.fetchone()
    except DatabaseError:
        logger.warning("read-your-writes: the primary's position could not be read")
        _pin()
        return
    _store(keys, int(lsn))


def written_keys(*keys: str) -> None:
    """A write for these keys committed (or commits with the current transaction): record the
    primary's position once it has. No-op without replicas."""
    if not settings.DATABASE_REPLICAS or not keys:
        return
    if connections[PRIMARY].in_atomic_block:
        transaction.on_commit(lambda: _record(keys))
    else:
        _record(keys)


def written(*subject_ids: str) -> None:
    """A write for these travellers committed (or commits with the current transaction)."""
    if settings.DATABASE_REPLICAS and subject_ids:
        written_keys(*(subject_key(s) for s in dict.fromkeys(subject_ids)))


async def written_async(conn: Any, subject_id: str) -> None:
    """`written` for the store's native connections, after their own COMMIT."""
    if not settings.DATABASE_REPLICAS:
        return
    cursor = await conn.execute(SQL_CURRENT_LSN, prepare=False)
    (lsn,) = await cursor.fetchone()
    keys = (subject_key(subject_id),)
    if not positions.in_redis():
        _store(keys, int(lsn))
    elif not await positions.store_async(keys, int(lsn)):
        _pin()


# --- ORM reads inside a page --------------------------------------------------------------------


class _Route:
    __slots__ = ("alias", "keys")

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = keys
        self.alias: str | None = None


_route: contextvars.ContextVar[_Route | None] = contextvars.ContextVar(
    "replica_route", default=None
)


@contextmanager
def replica_reads(*keys: str) -> Iterator[None]:
    """ORM reads of ROUTED_APPS inside go to one replica (chosen at the first read, by
    `read_alias(*keys)`), outside any transaction on the primary."""
    if not settings.DATABASE_REPLICAS:
        yield
        return
    token = _route.set(_Route(keys))
    try:
        yield
    finally:
        _route.reset(token)


def page_read(call: Callable[[], T], *keys: str) -> T:
    """`call()` (a page's view) with its ORM reads of ROUTED_APPS on a replica (`replica_reads`);
    if the replica fails under it, the page is read again from the primary. For safe requests
    (GET, HEAD) only."""
    if not settings.DATABASE_REPLICAS:
        return call()
    route = _Route(keys)
    token = _route.set(route)
    try:
        try:
            return call()
        except DatabaseError:
            if route.alias in (None, PRIMARY):
                raise
            logger.warning(
                "a page's read on replica %s failed: read again on the primary", route.alias
            )
            mark_down(route.alias)
            connections[route.alias].close_if_unusable_or_obsolete()
            route.alias = PRIMARY
            return call()
    finally:
        _route.reset(token)


def staff_key(user_id: Any) -> str:
    return f"u:{user_id}"


class ReplicaRouter:
    """Django's database router (DATABASE_ROUTERS, set when replicas are configured)."""

    def db_for_read(self, model: Any, **hints: Any) -> str:
        route = _route.get()
        if route is None or model._meta.app_label not in ROUTED_APPS:
            return PRIMARY
        if primary_in_transaction():
            return PRIMARY
        if route.alias is None:
            route.alias = read_alias(*route.keys)
        return route.alias

    def db_for_write(self, model: Any, **hints: Any) -> str:
        return PRIMARY

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == PRIMARY
