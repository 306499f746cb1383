"""Per-token rate limit, so one runaway agent host cannot starve the others.

The rate is the token's own `throttle_rate`, else settings.API_THROTTLE_RATE (read on every
request, not frozen at import). Counts live in the default Django cache, which is Redis whenever
more than one process serves (settings.CACHES), so all gunicorn workers count against one limit.

DRF's SimpleRateThrottle keeps a list of timestamps and writes it back after reading it: two
processes that read at once both write, and one request goes uncounted. Here each request takes
a number with the cache's atomic `incr` (INCR in Redis), so no two requests can both be the last
one allowed. The window slides: the previous fixed window still counts in proportion to how much
of it overlaps the last `period` seconds.

On Redis the whole decision is one small Lua script (EVALSHA): read both windows, and count the
request only if it is allowed. Redis runs a script atomically, so the limit holds across every
worker, a refused request never touches the count, and the agent's hot path pays one round trip
of one command. The script and its client are made once per process (building a redis-py client
per request, as the cache API does, cost more than the round trip).
"""

from __future__ import annotations

import contextlib
import time
import weakref
from typing import Any

from django.conf import settings
from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from .models import ServiceToken

_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """"600/min" -> (600, 60): DRF's notation, the period read from its first letter."""
    count, period = rate.split("/")
    return int(count), _PERIODS[period.strip()[0]]


# KEYS: this window's counter, the previous window's. ARGV: the limit, the share of the previous
# window still in view, the counter's lifetime in seconds. Returns 1 (allowed, counted) or 0.
_ALLOW_SCRIPT = """
local taken = tonumber(redis.call('GET', KEYS[1]) or '0') + 1
local earlier = tonumber(redis.call('GET', KEYS[2]) or '0')
if taken + earlier * tonumber(ARGV[2]) > tonumber(ARGV[1]) then
  return 0
end
if redis.call('INCR', KEYS[1]) == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[3])
end
return 1
"""
# One registered script per cache client (settings overrides in tests make new ones).
_scripts: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _redis_script(backend: RedisCache) -> Any:
    client = backend._cache
    script = _scripts.get(client)
    if script is None:
        script = client.get_client(write=True).register_script(_ALLOW_SCRIPT)
        _scripts[client] = script
    return script


def _allow(key: str, previous_key: str, *, limit: int, overlap: float, timeout: int) -> bool:
    """Count this request in its window if the sliding count stays within `limit`."""
    backend = caches["default"]
    if isinstance(backend, RedisCache):
        keys = [backend.make_and_validate_key(key), backend.make_and_validate_key(previous_key)]
        return bool(_redis_script(backend)(keys=keys, args=[limit, repr(overlap), timeout]))
    # Process-local cache (the embedded default, one process): take a number, give it back if
    # it is over the limit.
    cache.add(key, 0, timeout=timeout)
    try:
        taken = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=timeout)
        taken = 1
    if taken + cache.get(previous_key, 0) * overlap <= limit:
        return True
    with contextlib.suppress(ValueError):  # a refused request does not count
        cache.decr(key)
    return False


class TokenRateThrottle(BaseThrottle):
    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        token = request.auth
        if not isinstance(token, ServiceToken):
            return True  # unauthenticated requests are refused before throttling
        limit, period = parse_rate(token.throttle_rate or settings.API_THROTTLE_RATE)
        now = time.time()
        window = int(now // period)
        overlap = 1.0 - (now - window * period) / period  # share of the previous window in view
        key = f"throttle:token:{token.pk}:{period}:{window}"
        if _allow(key, f"throttle:token:{token.pk}:{period}:{window - 1}", limit=limit,
                  overlap=overlap, timeout=2 * period + 1):
            return True
        self._wait = max(1.0, (window + 1) * period - now)
        return False

    def wait(self) -> float | None:
        return self._wait
