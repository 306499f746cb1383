"""The agent API's core with the fenced speed tricks off (memoryadmin/fastpaths/): every trick
at once and each on its own. Reads, writes, deletes, the errors, the 429, the CSP header and
/healthz must answer the same whichever path a trick takes; a few tests also check that the
public path is the one that ran."""

from __future__ import annotations

import os

import pytest
from csp.utils import build_policy
from django.core.cache import caches
from django.test import override_settings
from rest_framework.response import Response

from memoryadmin.api import throttling
from memoryadmin.db import fastpaths
from tests.support.fastpaths import OFF_SETS, turn_off

from .conftest import db_state, facts_url, subject_url

pytestmark = pytest.mark.django_db

SUBJECT = "FF-FENCE-1"
WIRE_KEYS = {"key", "value", "category", "updated_at", "source_session_id", "version"}
REDIS_URL = os.environ.get("TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
DEAD_URL = "redis://127.0.0.1:9/0"  # nothing listens on the discard port: refused at once


@pytest.fixture(autouse=True, params=OFF_SETS)
def off(request, settings):
    turn_off(settings, request.param)
    yield request.param
    fastpaths.broken_reset()


def _redis_caches(url: str, prefix: str) -> dict:
    return {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": prefix,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }


def _redis(settings, url: str, prefix: str):
    settings.CACHES = _redis_caches(url, prefix)
    throttling.throttle_leases_clear()
    return caches["default"]


def _put(agent, *facts: tuple[str, str]):
    body = {"facts": [{"key": k, "value": v} for k, v in facts], "session_id": "sess-fence"}
    return agent.put(facts_url(SUBJECT), body, format="json")


def test_reads_writes_and_deletes_answer_the_same(agent, off):
    written = _put(agent, ("seat_preference", "Prefers aisle seats"), ("meal", "素食 vegetarian"))
    assert written.status_code == 200, written.content
    assert sorted(f["key"] for f in written.json()["facts"]) == ["meal", "seat_preference"]

    listed = agent.get(facts_url(SUBJECT))
    tier_one = agent.get(subject_url(SUBJECT, "tier-one"))
    one = agent.get(facts_url(SUBJECT, "seat_preference"))
    found = agent.get(subject_url(SUBJECT, "facts/search") + "?q=AISLE")
    assert [r.status_code for r in (listed, tier_one, one, found)] == [200] * 4
    assert [f["key"] for f in listed.json()["facts"]] == ["seat_preference", "meal"]
    assert listed.json() == {"facts": written.json()["facts"]}
    assert all(set(f) == WIRE_KEYS for f in listed.json()["facts"])
    assert {f["key"] for f in tier_one.json()["facts"]} <= {"seat_preference", "meal"}
    assert one.json()["value"] == "Prefers aisle seats" and one["ETag"] == '"1"'
    assert [f["key"] for f in found.json()["facts"]] == ["seat_preference"]

    updated = agent.put(
        facts_url(SUBJECT, "seat_preference"),
        {"value": "Prefers window seats"},
        format="json",
        HTTP_IF_MATCH='"1"',
    )
    assert updated.status_code == 200 and updated["ETag"] == '"2"'
    assert agent.delete(facts_url(SUBJECT, "meal")).status_code == 204
    assert agent.get(facts_url(SUBJECT, "meal")).status_code == 404
    assert [(f["key"], f["value"]) for f in agent.get(facts_url(SUBJECT)).json()["facts"]] == [
        ("seat_preference", "Prefers window seats")
    ]


def test_refusals_keep_their_shape_and_write_nothing(make_agent, off):
    from rest_framework.test import APIClient

    reader, writer = make_agent("memory:read"), make_agent("memory:write")
    before = db_state()
    cases = [
        (APIClient().get(facts_url(SUBJECT)), 401, "not_authenticated"),
        (writer.get(subject_url(SUBJECT, "tier-one")), 403, "insufficient_scope"),
        (reader.put(facts_url(SUBJECT), {"facts": []}, format="json"), 403, "insufficient_scope"),
        (reader.get(facts_url("FF\x01FENCE")), 400, "invalid"),
        (reader.get(facts_url(SUBJECT, "no_such_key")), 404, "not_found"),
        (writer.put(facts_url(SUBJECT), {"facts": "x"}, format="json"), 400, "invalid"),
    ]
    for response, status, code in cases:
        assert response.status_code == status, (status, response.content)
        assert response.json()["error"]["code"] == code
    assert db_state() == before


def test_a_token_over_its_rate_gets_429(make_agent, settings, off):
    settings.API_THROTTLE_RATE = "3/min"
    agent = make_agent()
    statuses = [agent.get(subject_url(SUBJECT, "tier-one")).status_code for _ in range(3)]
    refused = agent.get(facts_url(SUBJECT))
    assert statuses == [200, 200, 200]
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "throttled"
    assert int(refused["Retry-After"]) >= 1


def test_on_redis_the_limit_holds_whichever_trick_is_off(make_agent, settings, off):
    """On Redis the throttle's script runs on the client of `memoryadmin.db.redis` built from
    the cache's URL (no trick of its own): the limit, the 429 and the uncounted refusal hold
    with any trick off."""
    backend = _redis(settings, REDIS_URL, "fence-throttle")
    backend.clear()
    settings.API_THROTTLE_RATE = "3/min"
    agent = make_agent(name="fence-busy")
    statuses = [agent.get(facts_url(SUBJECT)).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    client = backend._cache.get_client()  # the test reads Redis itself
    [key] = client.keys("fence-throttle:*throttle:token:*")
    assert int(client.get(key)) == 3  # the refused request was not counted
    assert list(throttling._redis_counts) == [REDIS_URL]  # the script ran, on the cache's URL
    backend.clear()


@pytest.mark.parametrize("url", ["/login/", "/api/v1/subjects/FF-1/tier-one"])
def test_pages_and_answers_carry_the_site_policy(agent, client, url, settings, off):
    response = (agent if url.startswith("/api/") else client).get(url)
    assert response.status_code == 200
    assert response["Content-Security-Policy"] == build_policy()
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"default-src": ["'none'"]}}
    response = (agent if url.startswith("/api/") else client).get(url)
    assert response["Content-Security-Policy"] == "default-src 'none'" == build_policy()


def test_the_hot_reads_go_through_drf_when_the_lean_get_is_off(agent, off):
    response = agent.get(subject_url(SUBJECT, "tier-one"))
    assert response.status_code == 200
    assert isinstance(response, Response) is ("FASTPATH_API_LEAN_GET" in off)


@pytest.mark.parametrize("url", [REDIS_URL, DEAD_URL], ids=["redis-up", "redis-down"])
def test_healthz_asks_the_shared_cache(client, settings, url, off):
    from memoryadmin.db import redis as sharedcache

    settings.CELERY_BROKER_URL = ""
    sharedcache.fallback_reset()
    with override_settings(CACHES=_redis_caches(url, "fence-health")):  # gone before teardown
        response = client.get("/healthz")
    sharedcache.fallback_reset()
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok" if url == REDIS_URL else "degraded",
        "database": "ok",
        "broker": "eager",
        "cache": "ok" if url == REDIS_URL else "error",
        "write_filter": "ok",
    }
