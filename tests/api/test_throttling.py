"""Per-token rate limit: a token over its rate gets 429 with Retry-After; others are unaffected."""

from __future__ import annotations

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
