"""The hot reads (tier one, the facts list) answer a plain GET without DRF's request machinery;
what the agent receives must not tell the two paths apart, and every refusal still comes back in
the API's one error shape."""

from __future__ import annotations

import pytest
from django.test import override_settings

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor

from .conftest import facts_url, subject_url

# On the bare production cursor, without the suite's execute wrapper (tests/conftest.py).
pytestmark = [pytest.mark.django_db, pytest.mark.bare_cursor]

SUBJECT = "FF-LEAN-1"


@pytest.fixture
def facts(db):
    services.fact_upsert(
        subject_id=SUBJECT,
        facts=[
            services.FactDraft("seat_preference", "Aisle, 靠走道"),
            services.FactDraft("no_red_eyes", "Avoids red-eye flights", "constraint"),
        ],
        actor=Actor.system("test"),
    )


def _comparable(response) -> tuple[int, bytes, dict[str, str]]:
    # Expires follows the clock and X-Request-ID is made per request: neither tells paths apart.
    headers = {
        name: value for name, value in response.items() if name not in ("Expires", "X-Request-ID")
    }
    return response.status_code, response.content, headers


@pytest.mark.parametrize("tail", ["tier-one", "facts"])
def test_the_plain_get_is_the_same_answer_as_the_full_drf_one(agent, facts, tail):
    """`Accept: application/*` is not one the lean path takes, so DRF answers it in full."""
    url = subject_url(SUBJECT, tail)
    lean = agent.get(url)
    lean_json = agent.get(url, HTTP_ACCEPT="application/json")
    full = agent.get(url, HTTP_ACCEPT="application/*")

    assert lean.status_code == 200
    assert [f["key"] for f in lean.json()["facts"]]  # there is something to compare
    assert _comparable(lean) == _comparable(full) == _comparable(lean_json)


@pytest.mark.parametrize("tail", ["tier-one", "facts"])
def test_refusals_on_the_hot_reads_keep_the_error_shape(make_agent, facts, tail):
    from rest_framework.test import APIClient

    url = subject_url(SUBJECT, tail)
    anonymous = APIClient()
    unknown = APIClient()
    unknown.credentials(HTTP_AUTHORIZATION="Bearer mat_not-a-token")
    writer_only = make_agent("memory:write")
    reader = make_agent("memory:read")

    cases = [
        (anonymous.get(url), 401, "not_authenticated"),
        (unknown.get(url), 401, "authentication_failed"),
        (writer_only.get(url), 403, "insufficient_scope"),
        (reader.get(url + "?cap=3"), 400, "invalid"),
        (reader.get(subject_url("FF\x01LEAN", tail)), 400, "invalid"),
        (reader.get(url, HTTP_ACCEPT="text/html"), 406, "not_acceptable"),
    ]
    for response, status, code in cases:
        assert response.status_code == status, (status, response.content)
        assert response.json()["error"]["code"] == code
    assert cases[0][0]["WWW-Authenticate"].startswith("Bearer")


@override_settings(API_THROTTLE_RATE="2/min")
def test_the_hot_reads_are_throttled_and_a_refusal_is_not_counted_twice(agent, facts):
    statuses = [agent.get(subject_url(SUBJECT, "tier-one")).status_code for _ in range(3)]
    refused = agent.get(facts_url(SUBJECT))

    assert statuses == [200, 200, 429]
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "throttled"
    assert int(refused["Retry-After"]) >= 1


def test_a_revoked_token_is_refused_on_the_hot_reads(make_agent, facts):
    from memoryadmin.api.tokens import token_revoke

    host = make_agent("memory:read")
    assert host.get(subject_url(SUBJECT, "tier-one")).status_code == 200
    token_revoke(token=host.token)

    response = host.get(subject_url(SUBJECT, "tier-one"))

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"
