"""Per-token rate limit, so one runaway agent host cannot starve the others.

The rate is the token's own `throttle_rate`, else settings.API_THROTTLE_RATE (read on every
request, not frozen at import), both in the one rate grammar (`memoryadmin.conf.env.parse_rate`:
the setting is checked when settings load, a token's rate when it is issued). Counts live in the
default Django cache, which is Redis whenever more than one process serves (settings.CACHES), so
all gunicorn workers count against one limit.

DRF's SimpleRateThrottle keeps a list of timestamps and writes it back after reading it: two
processes that read at once both write, and one request goes uncounted. Here each request takes
a number with the cache's atomic `incr` (INCR in Redis), so no two requests can both be the last
one allowed. The window slides: the previous fixed window still counts in proportion to how much
of it overlaps the last `period` seconds.

On Redis the decision is one small Lua script (EVALSHA): read both windows and count the
request only if it is allowed. Redis runs a script atomically, so the limit holds across every
worker and a refused request never touches the count. The script is registered once per process
on the redis-py client `memoryadmin.db.redis_client` keeps for the cache's URL (building a
client per request, as the cache API does, cost more than the round trip); the keys are the
cache's own (`make_and_validate_key`), so the per-process fallback counts under the same names.

So that a busy token does not pay a Redis round trip on every request, the script may hand a
process a few numbers at once (a lease: at most 1% of the limit, at most
API_THROTTLE_LEASE_MAX), which the process then gives out without asking. The numbers are
counted in Redis when leased, so all workers together still never admit more than the limit; a
lease left unused when its window ends counts without having been used, so a token can be
refused a few requests early (at most a lease per process per window). A limit under 200 per
period is counted request by request, exactly as before.

When Redis is down the throttle fails open to a per-process limit (`memoryadmin.db.redis`):
each process counts in its own memory against the same limit, and a warning is logged once a
minute. The agent API goes on answering from PostgreSQL.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from memoryadmin.conf.env import rate_of
from memoryadmin.db import (
    CACHE_ERRORS,
    cache_url,
    local_cache,
    redis_client,
    shared_cache_failed,
    shared_cache_up,
)

from .models import ServiceToken

# KEYS: this window's counter, the previous window's. ARGV: the limit, the share of the previous
# window still in view, the counter's lifetime in seconds, how many numbers the caller would like.
# Returns how many were granted (and counted): 0 means refused.
_ALLOW_SCRIPT = """
local taken = tonumber(redis.call('GET', KEYS[1]) or '0')
local earlier = tonumber(redis.call('GET', KEYS[2]) or '0')
local room = math.floor(tonumber(ARGV[1]) - earlier * tonumber(ARGV[2]) - taken)
if room < 1 then
  return 0
end
local grant = math.min(room, tonumber(ARGV[4]))
if redis.call('INCRBY', KEYS[1], grant) == grant then
  redis.call('EXPIRE', KEYS[1], ARGV[3])
end
return grant
"""


class _RedisCounts:
    """Per process and Redis server: the registered script and the leases it handed out."""

    def __init__(self, client: Any) -> None:
        self.script = client.register_script(_ALLOW_SCRIPT)
        self.lock = threading.Lock()
        self.leases: dict[str, tuple[str, int]] = {}  # slot -> (window key, numbers left)

    def take(
        self,
        slot: str,
        key: str,
        previous_key: str,
        *,
        limit: int,
        overlap: float,
        timeout: int,
        make_key: Callable[[str], str],
    ) -> bool:
        """`key` and `previous_key` as the throttle names them; `make_key` gives the cache's
        full keys, needed (and validated) only when Redis is asked."""
        with self.lock:
            window, left = self.leases.get(slot, ("", 0))
            if window == key and left > 0:
                self.leases[slot] = (key, left - 1)
                return True
        want = max(1, min(settings.API_THROTTLE_LEASE_MAX, limit // 100))
        granted = int(
            self.script(
                keys=[make_key(key), make_key(previous_key)],
                args=[limit, repr(overlap), timeout, want],
            )
        )
        if granted > 1:
            with self.lock:
                window, left = self.leases.get(slot, ("", 0))
                self.leases[slot] = (key, (left if window == key else 0) + granted - 1)
        return granted > 0


_redis_counts: dict[str, _RedisCounts] = {}
_redis_counts_lock = threading.Lock()


def _counts_for(url: str) -> _RedisCounts:
    """The script and leases for the cache's Redis at `url`."""
    counts = _redis_counts.get(url)
    if counts is None:
        with _redis_counts_lock:
            counts = _redis_counts.setdefault(url, _RedisCounts(redis_client(url)))
    return counts


def throttle_leases_clear() -> None:
    """Forget the numbers this process holds (tests: after clearing the cache)."""
    with _redis_counts_lock:
        _redis_counts.clear()


def _allow(
    slot: str, key: str, previous_key: str, *, limit: int, overlap: float, timeout: int
) -> bool:
    """Count this request in its window if the sliding count stays within `limit`."""
    backend = caches["default"]
    url = cache_url()
    if url:
        if shared_cache_up():
            try:
                return _counts_for(url).take(
                    slot,
                    key,
                    previous_key,
                    limit=limit,
                    overlap=overlap,
                    timeout=timeout,
                    make_key=backend.make_and_validate_key,
                )
            except CACHE_ERRORS as exc:
                shared_cache_failed("the API throttle", exc)
        backend = local_cache()
    return _allow_local(backend, key, previous_key, limit=limit, overlap=overlap, timeout=timeout)


def _allow_local(
    cache: BaseCache, key: str, previous_key: str, *, limit: int, overlap: float, timeout: int
) -> bool:
    """Through Django's public cache API on the process-local cache (the embedded default, one
    process; or Redis is down). Take a number (an atomic `incr`), give it back if it is over
    the limit."""
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
        limit, period = rate_of(token.throttle_rate or settings.API_THROTTLE_RATE)
        now = time.time()
        window = int(now // period)
        overlap = 1.0 - (now - window * period) / period  # share of the previous window in view
        slot = f"throttle:token:{token.pk}:{period}"
        if _allow(
            slot,
            f"{slot}:{window}",
            f"{slot}:{window - 1}",
            limit=limit,
            overlap=overlap,
            timeout=2 * period + 1,
        ):
            return True
        self._wait = max(1.0, (window + 1) * period - now)
        return False

    def wait(self) -> float | None:
        return self._wait
