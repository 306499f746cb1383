"""A fixed-window counter per client address in Django's cache (Redis when the cache points at
it, so every web worker counts against one limit). With Redis down, each process counts on its
own (`memoryadmin.sharedcache`)."""

from __future__ import annotations

from django.core.cache.backends.base import BaseCache
from django.http import HttpRequest

from memoryadmin.db.redis import with_fallback

_PERIODS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """ "10/min" -> (10, 60)."""
    count, _, period = rate.partition("/")
    return int(count), _PERIODS[period.strip().lower()]


def client_address(request: HttpRequest) -> str:
    return request.META.get("REMOTE_ADDR") or "unknown"


def hit(request: HttpRequest, *, scope: str, rate: str) -> bool:
    """Count one attempt; False once the address is over its limit for this window."""
    limit, period = parse_rate(rate)
    key = f"portal:throttle:{scope}:{client_address(request)}"

    def count(cache: BaseCache) -> int:
        if cache.add(key, 1, timeout=period):
            return 1
        try:
            return cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=period)
            return 1

    return with_fallback("the portal's link throttle", count) <= limit
