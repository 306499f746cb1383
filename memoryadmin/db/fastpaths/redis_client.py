"""FASTPATH_REDIS_CLIENT: redis-py's own client behind Django's RedisCache, for what the cache
API cannot do: the API throttle's Lua script (one EVALSHA a decision, with leases) and the
health check's PING.

Written against Django 5.2's `django.core.cache.backends.redis.RedisCache`, whose private
`_cache` (a RedisCacheClient, `get_client(write=True)`) and `_servers` (the server URLs) it
reads, and redis-py 8.

Safe fallback (the setting off, or those names gone, or Django not at major version 5): None
from both functions, and the callers use only Django's public cache API (`add`/`incr`/`decr`
for the throttle, a `get` for the health check)."""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.redis import RedisCache

from . import broken, enabled, fits

SETTING = "FASTPATH_REDIS_CLIENT"


def _fits(backend: RedisCache) -> bool:
    if not fits(SETTING, "django", 5, (backend, "_cache"), (backend, "_servers")):
        return False
    if not hasattr(backend._cache, "get_client"):
        broken(SETTING, "Django's RedisCacheClient no longer has get_client")
        return False
    return True


def servers(backend: RedisCache) -> tuple[str, ...] | None:
    """The backend's server URLs (what the throttle's per-process script is made for)."""
    if not (enabled(SETTING) and _fits(backend)):
        return None
    return tuple(backend._servers)


def write_client(backend: RedisCache) -> Any:
    """redis-py's client for writes (the primary), or None: use the public cache API."""
    if not (enabled(SETTING) and _fits(backend)):
        return None
    return backend._cache.get_client(write=True)
