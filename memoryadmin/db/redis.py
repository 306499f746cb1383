"""The one module that owns Redis connections, and what to do when Redis is away.

The shared cache (Redis) speeds things up and lets processes agree on counts; it is never what
keeps the agent API, the staff pages or the portal up. PostgreSQL is the system of record.

Three users, each through redis-py's public API: Django's cache (`caches["default"]`, the
portal's throttle through `with_fallback`); `client(url)`, one redis-py client per process and
URL (the API throttle's script, `/healthz`'s PING, the write positions of `positions.py`); and
`async_client()`, one `redis.asyncio` client per event loop (the store's positions). Their
clients fail fast (two-second timeouts, no retry): a caller that sees a failure reports it with
`shared_cache_failed` and goes on without Redis. The process's watch of the positions
(`redis_watch.py`) is the one connection of its own.

When a call to the shared cache fails, callers count in process memory instead (each process
then enforces its own limit: the limits fail open, per process), the cache is left alone for
`CACHE_RETRY_SECONDS` (no connection attempt per request while Redis is down), and one warning
per minute says so, not one per request. Imports nothing of ours: every face may use it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import redis
import redis.asyncio
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.locmem import LocMemCache
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

logger = logging.getLogger(__name__)

# What a Redis outage raises through the cache API or redis-py: refused, reset, timed out.
CACHE_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError)
WARNING_INTERVAL_SECONDS = 60.0

T = TypeVar("T")

_lock = threading.Lock()
_resting_until = 0.0
_warned_at: dict[str, float] = {}
_local = LocMemCache("memoryadmin-shared-cache-fallback", {"OPTIONS": {"MAX_ENTRIES": 10000}})


def local_cache() -> BaseCache:
    """This process's stand-in for the shared cache."""
    return _local


def shared_cache_up() -> bool:
    """False for a while after a failure: callers go straight to the local stand-in."""
    return time.monotonic() >= _resting_until


def shared_cache_failed(what: str, exc: BaseException) -> None:
    """Record a failure of the shared cache; warn at most once a minute per `what`. The
    exception's class only: its text may carry a key."""
    global _resting_until
    now = time.monotonic()
    with _lock:
        _resting_until = now + settings.CACHE_RETRY_SECONDS
        last = _warned_at.get(what)
        if last is not None and now - last < WARNING_INTERVAL_SECONDS:
            return
        _warned_at[what] = now
    logger.warning(
        "shared cache unreachable (%s): %s falls back to per-process counts for now",
        type(exc).__name__,
        what,
    )


def with_fallback(what: str, call: Callable[[BaseCache], T]) -> T:
    """`call(cache)` on the shared cache, or on this process's stand-in when the shared cache
    is down (or just failed)."""
    if shared_cache_up():
        try:
            return call(caches["default"])
        except CACHE_ERRORS as exc:
            shared_cache_failed(what, exc)
    return call(_local)


def fallback_reset() -> None:
    """Forget failures and warnings (tests)."""
    global _resting_until
    with _lock:
        _resting_until = 0.0
        _warned_at.clear()
    _local.clear()


# --- redis-py clients ---------------------------------------------------------------------------


def options(*, is_async: bool = False) -> dict[str, Any]:
    """redis-py's connection options for our clients: fail within two seconds, never retry (a
    retry would hold a request while Redis is away; the caller falls back instead)."""
    retry = (AsyncRetry if is_async else Retry)(NoBackoff(), 0)
    return {"socket_connect_timeout": 2, "socket_timeout": 2, "retry": retry}


def cache_url() -> str:
    """The URL of Django's default cache when it is Redis (its first server: the one it
    writes to), else "" (process-local memory)."""
    cache = settings.CACHES["default"]
    if not cache["BACKEND"].endswith(".RedisCache"):
        return ""
    location = cache["LOCATION"]
    if isinstance(location, str):
        location = location.split(",")
    return location[0].strip()


_clients: dict[tuple[int, str], redis.Redis] = {}


def client(url: str = "") -> redis.Redis:
    """This process's redis-py client for `url` (default CACHE_URL): a pool, thread-safe,
    made again in a forked child."""
    key = (os.getpid(), url or settings.CACHE_URL)
    found = _clients.get(key)
    if found is None:
        with _lock:
            found = _clients.setdefault(key, redis.Redis.from_url(key[1], **options()))
    return found


_loop_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, redis.asyncio.Redis] = (
    weakref.WeakKeyDictionary()
)


def async_client() -> redis.asyncio.Redis:
    """The running event loop's `redis.asyncio` client for CACHE_URL (its connections belong to
    that loop; `async_client_close` when the loop ends)."""
    loop = asyncio.get_running_loop()
    found = _loop_clients.get(loop)
    if found is None:
        found = _loop_clients[loop] = redis.asyncio.Redis.from_url(
            settings.CACHE_URL, **options(is_async=True)
        )
    return found


async def async_client_close() -> None:
    """Close the running loop's client, if it made one."""
    found = _loop_clients.pop(asyncio.get_running_loop(), None)
    if found is not None:
        await found.aclose()


def clients_reset() -> None:
    """Close this process's sync clients (tests: a Redis stopped or restarted under them)."""
    with _lock:
        found = list(_clients.values())
        _clients.clear()
    for each in found:
        each.close()
