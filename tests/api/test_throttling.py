"""Per-token rate limit: a token over its rate gets 429 with Retry-After; others are unaffected."""

from __future__ import annotations

import time

import pytest
from django.core.cache import cache
from django.test import override_settings

from .conftest import db_state, facts_url

pytestmark = pytest.mark.django_db


@override_settings(API_THROTTLE_RATE="3/min")
def test_a_token_over_its_rate_gets_429_with_retry_after(make_agent):
    cache.clear()
    busy = make_agent(name="busy-host")
    quiet = make_agent(name="quiet-host")

    statuses = [busy.get(facts_url("FF-0005")).status_code for _ in range(3)]
    throttled = busy.get(facts_url("FF-0005"))

    assert statuses == [200, 200, 200]
    assert throttled.status_code == 429
    assert throttled.json()["error"]["code"] == "throttled"
    assert 1 <= int(throttled["Retry-After"]) <= 60
    assert quiet.get(facts_url("FF-0005")).status_code == 200


@override_settings(API_THROTTLE_RATE="1/min")
def test_throttled_writes_write_nothing(make_agent):
    cache.clear()
    host = make_agent()
    host.get(facts_url("FF-0005"))
    before = db_state()

    response = host.put(facts_url("FF-0005", "seat"), {"value": "Aisle"}, format="json")

    assert response.status_code == 429
    assert db_state() == before


def test_the_default_rate_is_generous_enough_for_a_busy_turn(agent):
    statuses = {agent.get(facts_url("FF-0005")).status_code for _ in range(50)}

    assert statuses == {200}


@override_settings(API_THROTTLE_RATE="2/min")
def test_a_token_with_its_own_rate_gets_that_rate_and_others_the_setting(issue_token):
    from rest_framework.test import APIClient

    from memoryadmin.api.tokens import token_issue

    cache.clear()
    _, roomy_secret = token_issue(name="roomy", scopes=["memory:read"], throttle_rate="5/min")
    _, plain_secret = token_issue(name="plain", scopes=["memory:read"])
    roomy, plain = APIClient(), APIClient()
    roomy.credentials(HTTP_AUTHORIZATION=f"Bearer {roomy_secret}")
    plain.credentials(HTTP_AUTHORIZATION=f"Bearer {plain_secret}")

    roomy_statuses = [roomy.get(facts_url("FF-0005")).status_code for _ in range(6)]
    plain_statuses = [plain.get(facts_url("FF-0005")).status_code for _ in range(3)]

    assert roomy_statuses == [200] * 5 + [429]
    assert plain_statuses == [200, 200, 429]


@pytest.mark.parametrize("rate", ["fast", "0/min", "10/fortnight", "10", "-1/s"])
def test_a_token_rate_must_be_requests_per_period(rate):
    from django.core.exceptions import ValidationError

    from memoryadmin.api.tokens import token_issue

    with pytest.raises(ValidationError) as refused:
        token_issue(name="x", scopes=["memory:read"], throttle_rate=rate)

    assert "throttle_rate" in refused.value.message_dict


def test_the_shared_cache_is_redis_whenever_the_broker_is():
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import django; django.setup(); from django.conf import settings as s;"
        "print(s.CACHES['default']['BACKEND'], s.CACHES['default'].get('LOCATION', ''))"
    )
    base = {
        "PATH": os.environ.get("PATH", ""),
        "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
        "DEBUG": "true",
        "DATABASE_URL": os.environ["DATABASE_URL"],
    }
    root = Path(__file__).resolve().parents[2]

    def backend(**env: str) -> list[str]:
        out = subprocess.run(  # noqa: S603 - fixed argv
            [sys.executable, "-c", code],
            cwd=root,
            env={**base, **env},
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.split()

    assert backend() == ["django.core.cache.backends.locmem.LocMemCache"]
    assert backend(CELERY_BROKER_URL="redis://127.0.0.1:6379/4") == [
        "django.core.cache.backends.redis.RedisCache",
        "redis://127.0.0.1:6379/4",
    ]
    assert backend(
        CELERY_BROKER_URL="redis://127.0.0.1:6379/4", CACHE_URL="redis://127.0.0.1:6379/5"
    ) == ["django.core.cache.backends.redis.RedisCache", "redis://127.0.0.1:6379/5"]


def _redis_cache(settings, prefix: str):
    import os

    from django.core.cache import caches

    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ.get("TEST_BROKER_URL", "redis://127.0.0.1:6379/15"),
            "KEY_PREFIX": prefix,
        }
    }
    backend = caches["default"]
    backend.clear()
    return backend


def test_on_redis_the_limit_holds_and_a_refused_request_is_not_counted(make_agent, settings):
    """Production counts in Redis, deciding in one script per request (a limit this small is
    never leased out): the limit and the 429 are the same as anywhere."""
    backend = _redis_cache(settings, "throttle-test")
    settings.API_THROTTLE_RATE = "3/min"
    busy = make_agent(name="redis-busy-host")
    statuses = [busy.get(facts_url("FF-0005")).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    [key] = [k for k in backend._cache.get_client().keys("throttle-test:*throttle:token:*")]
    client = backend._cache.get_client()
    assert int(client.get(key)) == 3  # the refused request was not counted
    assert 0 < client.ttl(key) <= 121
    backend.clear()


def _admitted_in_a_worker(rate: str, tries: int, queue) -> None:
    """One gunicorn worker's share of the traffic: its own process, its own Redis connection
    and leases, the same token."""
    from types import SimpleNamespace

    from memoryadmin.api.models import ServiceToken
    from memoryadmin.api.throttling import TokenRateThrottle, throttle_leases_clear

    throttle_leases_clear()  # nothing inherited from the parent
    request = SimpleNamespace(auth=ServiceToken(pk=987654, name="shared", throttle_rate=rate))
    queue.put(sum(TokenRateThrottle().allow_request(request, None) for _ in range(tries)))


@pytest.mark.parametrize("rate", ["60/min", "2000/min"])  # exact counting, and leased numbers
def test_workers_sharing_a_token_admit_exactly_its_limit_together(settings, rate):
    """Four processes racing on one token over Redis admit exactly the limit between them, no
    more (atomic counting) and, when they keep asking, no less (no lease is left unused)."""
    import multiprocessing

    from memoryadmin.conf.env import parse_rate

    backend = _redis_cache(settings, "throttle-workers")
    limit, period = parse_rate(rate)
    # The window slides: a run that crosses into the next minute may rightly admit a few more
    # (the full window just closed counts a little less each moment). Start early in a window.
    into = time.time() % period
    if into > period - 20:
        time.sleep(period - into + 0.2)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    workers = [
        context.Process(target=_admitted_in_a_worker, args=(rate, limit, queue)) for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    admitted = [queue.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(10)

    assert sum(admitted) == limit
    backend.clear()
