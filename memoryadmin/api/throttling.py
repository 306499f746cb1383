"""Per-token rate limit, so one runaway agent host cannot starve the others.

The rate is the token's own `throttle_rate`, else settings.API_THROTTLE_RATE (read on every
request, not frozen at import). Counts live in the default Django cache, which is Redis whenever
more than one process serves (settings.CACHES), so all gunicorn workers count against one limit.

DRF's SimpleRateThrottle keeps a list of timestamps and writes it back after reading it: two
processes that read at once both write, and one request goes uncounted. Here each request takes
a number with the cache's atomic `incr` (INCR in Redis), so no two requests can both be the last
one allowed. The window slides: the previous fixed window still counts in proportion to how much
of it overlaps the last `period` seconds.

On Redis the three steps of an allowed request (create the window's counter, take a number, read
the previous window) travel as one MULTI/EXEC pipeline: one round trip per request instead of
four, on the agent's hot path.
"""

from __future__ import annotations

import contextlib
import time
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


def _take_number(key: str, previous_key: str, timeout: int) -> tuple[int, int]:
    """Count this request in its window; return (its number, the previous window's count)."""
    backend = caches["default"]
    if isinstance(backend, RedisCache):
        current = backend.make_and_validate_key(key)
        previous = backend.make_and_validate_key(previous_key)
        pipe = backend._cache.get_client(current, write=True).pipeline(transaction=True)
        pipe.set(current, 0, nx=True, ex=timeout)
        pipe.incr(current)
        pipe.get(previous)
        _, taken, earlier = pipe.execute()
        return int(taken), int(earlier or 0)
    cache.add(key, 0, timeout=timeout)
    try:
        taken = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=timeout)
        taken = 1
    return taken, cache.get(previous_key, 0)


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
        taken, earlier = _take_number(
            key, f"throttle:token:{token.pk}:{period}:{window - 1}", timeout=2 * period + 1
        )
        if taken + earlier * overlap <= limit:
            return True
        with contextlib.suppress(ValueError):  # a refused request does not count
            cache.decr(key)
        self._wait = max(1.0, (window + 1) * period - now)
        return False

    def wait(self) -> float | None:
        return self._wait
