"""The shared cache (Redis) speeds things up and lets processes agree on counts; it is never what
keeps the agent API, the staff pages or the portal up. PostgreSQL is the system of record.

When a call to the shared cache fails, callers count in process memory instead (each process
then enforces its own limit: the limits fail open, per process), the cache is left alone for
`CACHE_RETRY_SECONDS` (no connection attempt per request while Redis is down), and one warning
per minute says so, not one per request. Imports nothing of ours: every face may use it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.locmem import LocMemCache
from redis.exceptions import RedisError

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
