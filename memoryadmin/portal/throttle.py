"""A fixed-window counter per client address in Django's cache (Redis when the cache points at
it, so every web worker counts against one limit). With Redis down, each process counts on its
own (`memoryadmin.db.redis`)."""

from __future__ import annotations

from django.core.cache.backends.base import BaseCache
from django.http import HttpRequest

from memoryadmin.conf.env import Rate, rate_of
from memoryadmin.db import with_fallback


def client_address(request: HttpRequest) -> str:
    return request.META.get("REMOTE_ADDR") or "unknown"


def hit(request: HttpRequest, *, scope: str, rate: Rate | str) -> bool:
    """Count one attempt; False once the address is over its limit for this window. The rate is
    a setting read by `env.rate` (PORTAL_REDEEM_RATE)."""
    limit, period = rate_of(rate)
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
