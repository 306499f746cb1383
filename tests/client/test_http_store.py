"""HttpMemoryStore against the real agent API (live_server on PostgreSQL): the MemoryStore
contract, then what only the HTTP client does (typed errors, versions, retries, audit)."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import pytest

from memoryadmin.api.models import Scope
from memoryadmin.api.tokens import token_issue
from memoryadmin.facts.models import ActorKind, EventAction, FactEvent, MemoryFact, Subject
from memoryadmin.facts.validation import session_tag
from memoryadmin.testing.fake_anthropic import serving, tool_use
from memoryadmin_client.errors import AuthError, Blocked, Conflict, Invalid, NotFound
from memoryadmin_client.http import HttpMemoryStore
from tests.facts.store_contract import MemoryStoreContract, fact, run

from .conftest import TOKEN_NAME
from .servers import DroppingProxy

pytestmark = pytest.mark.django_db(transaction=True)


class TestHttpMemoryStore(MemoryStoreContract):
    @pytest.fixture
    def store(self, http_store):
        return http_store


# --- who is asking -----------------------------------------------------------------------------


def test_a_bad_token_is_an_auth_error(live_server, transactional_db):
    store = HttpMemoryStore(live_server.url, "mat_not-a-real-token")
    with pytest.raises(AuthError) as caught:
        run(store.get_facts, "t-1")
    assert caught.value.status == 401


def test_a_token_without_the_write_scope_cannot_write(live_server, transactional_db):
    _, secret = token_issue(name="read-only-host", scopes=[Scope.MEMORY_READ.value])
    store = HttpMemoryStore(live_server.url, secret)
    assert run(store.get_facts, "t-1") == []
    with pytest.raises(AuthError) as caught:
        run(store.upsert_facts, "t-1", [fact("meal", "Vegetarian meals")])
    assert caught.value.status == 403
    assert not MemoryFact.objects.filter(subject_id="t-1").exists()


def test_writes_are_audited_as_the_token_with_only_a_session_tag(http_store):
    run(http_store.upsert_facts, "t-audit", [fact("meal", "Vegetarian meals")])
    run(http_store.upsert_facts, "t-audit", [fact("seat", "Aisle")], session_id="sess-other")
    meal = FactEvent.objects.get(subject_id="t-audit", key="meal")
    seat = FactEvent.objects.get(subject_id="t-audit", key="seat")
    assert (meal.actor_kind, meal.actor_label) == (ActorKind.AGENT, f"token:{TOKEN_NAME}")
    assert meal.session_tag == session_tag("sess-http-1")
    assert seat.session_tag == session_tag("sess-other")
    [got, _] = sorted(run(http_store.get_facts, "t-audit"), key=lambda f: f.key)
    assert got.source_session_id == session_tag("sess-http-1")


# --- typed errors ------------------------------------------------------------------------------


def test_blocked_value_raises_blocked_without_the_value(http_store):
    value = "Card 4111 1111 1111 1111"
    with pytest.raises(Blocked) as caught:
        run(http_store.upsert_facts, "t-block", [fact("payment", value)])
    error = caught.value
    assert (error.status, error.code) == (422, "blocked_by_filter")
    assert value not in error.message and "4111" not in str(error.fields)
    assert error.fields  # names the refused field
    assert run(http_store.get_facts, "t-block") == []


def test_stale_if_match_is_a_conflict_and_writes_nothing(http_store):
    first = run(http_store.put_fact, "t-ver", "seat_preference", "Prefers aisle seats")
    assert first.version == 1 and first.fact.value == "Prefers aisle seats"
    second = run(
        http_store.put_fact,
        "t-ver",
        "seat_preference",
        "Prefers window seats",
        expected_version=first.version,
    )
    assert second.version == 2
    with pytest.raises(Conflict) as caught:
        run(
            http_store.put_fact,
            "t-ver",
            "seat_preference",
            "Prefers middle seats",
            expected_version=first.version,
        )
    assert caught.value.status == 412
    current = run(http_store.read_fact, "t-ver", "seat_preference")
    assert (current.fact.value, current.version) == ("Prefers window seats", 2)


def test_missing_fact_is_none_and_a_missing_address_is_not_found(http_store):
    assert run(http_store.get_fact, "t-404", "meal") is None
    assert run(http_store.read_fact, "t-404", "meal") is None
    assert run(http_store.delete_fact, "t-404", "meal") is False
    with pytest.raises(NotFound) as caught:
        run(http_store.request, "GET", "/api/v1/no-such-endpoint")
    assert caught.value.status == 404


def test_an_invalid_request_is_invalid_with_field_messages(http_store):
    with pytest.raises(Invalid) as caught:
        run(http_store.request, "GET", "/api/v1/subjects/t-1/facts/search", params={"q": "x" * 101})
    assert caught.value.status == 400
    assert "q" in caught.value.fields


def test_a_held_fact_is_reported_as_held(http_store):
    got = run(http_store.put_fact, "t-held", "Mobility", "Uses a wheelchair at airports")
    assert got.held == "pending_review"
    assert got.fact.key == "mobility"
    assert run(http_store.get_fact, "t-held", "mobility") is None


def test_odd_characters_in_subject_and_key_survive_the_path(http_store):
    subject, key = "traveller:ü?#1", "座位 偏好"
    run(http_store.put_fact, subject, key, "Prefers aisle seats")
    got = run(http_store.get_fact, subject, key)
    assert got is not None and got.key == "座位_偏好"
    assert MemoryFact.objects.filter(subject_id=subject, key="座位_偏好").exists()
    assert run(http_store.delete_fact, subject, "座位_偏好") is True


# --- retries against the real server -----------------------------------------------------------


def upstream_of(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return ("127.0.0.1" if parts.hostname == "localhost" else parts.hostname, parts.port)


def test_a_read_succeeds_after_the_first_connection_drops(live_server, api_token):
    run(
        HttpMemoryStore(live_server.url, api_token).upsert_facts,
        "t-retry",
        [fact("meal", "Vegetarian meals")],
    )
    with DroppingProxy(upstream_of(live_server.url), drop=1) as proxy:
        store = HttpMemoryStore(proxy.url, api_token, backoff=0.01)
        got = run(store.get_facts, "t-retry")
    assert proxy.connections == 2
    assert [(f.key, f.value) for f in got] == [("meal", "Vegetarian meals")]


def test_a_clear_whose_connection_dropped_is_retried_and_applied_once(live_server, api_token):
    with DroppingProxy(upstream_of(live_server.url), drop=1) as proxy:
        store = HttpMemoryStore(proxy.url, api_token, backoff=0.01)
        run(store.clear, "t-clear")
    assert proxy.connections == 2
    assert Subject.objects.get(subject_id="t-clear").purge_generation == 1
    assert (
        FactEvent.objects.filter(subject_id="t-clear", action=EventAction.SUBJECT_CLEARED).count()
        == 1
    )


def test_the_store_works_inside_one_long_running_loop(http_store):
    """The normal host: one loop, one pooled client, many calls."""

    async def conversation() -> list[str]:
        await http_store.upsert_facts("t-loop", [fact("meal", "Vegetarian meals")])
        await http_store.upsert_facts("t-loop", [fact("seat", "Prefers aisle seats")])
        found = await http_store.search_facts("t-loop", "aisle")
        await http_store.aclose()
        return [f.key for f in found]

    assert asyncio.run(conversation()) == ["seat"]


# --- turns (issue 4) ---------------------------------------------------------------------------

AISLE_TURN = [
    {"role": "user", "text": "Please always give me an aisle seat."},
    {"role": "assistant", "text": "Done, aisle seat 14C."},
]


def test_a_posted_turn_is_learned_and_its_job_can_be_read(http_store, settings):
    with serving(settings) as fake_model:
        fake_model.script(
            tool_use(
                [
                    {
                        "key": "seat_preference",
                        "value": "Prefers aisle seats",
                        "category": "preference",
                    },
                ]
            )
        )
        accepted = run(
            http_store.post_turn,
            "t-turn",
            session_id="sess-turn",
            turn_id="turn-1",
            messages=AISLE_TURN,
        )
    assert set(accepted) == {"job_id", "status"}
    job = run(http_store.job, accepted["job_id"])
    assert (job["job_id"], job["subject_id"], job["turn_id"]) == (
        accepted["job_id"],
        "t-turn",
        "turn-1",
    )
    assert job["status"] == "succeeded" and job["counts"]["stored"] == 1
    [learned] = run(http_store.get_facts, "t-turn")
    assert (learned.key, learned.value) == ("seat_preference", "Prefers aisle seats")
    assert learned.source_session_id == session_tag("sess-turn")


def test_posting_the_same_turn_again_returns_the_same_job(http_store, settings):
    settings.ANTHROPIC_API_KEY = ""  # no model: the job is accepted and skipped
    first = run(http_store.post_turn, "t-turn2", session_id="s", turn_id="t1", messages=AISLE_TURN)
    again = run(http_store.post_turn, "t-turn2", session_id="s", turn_id="t1", messages=AISLE_TURN)
    assert again["job_id"] == first["job_id"]
    assert run(http_store.job, first["job_id"])["status"] == "skipped"


def test_an_unknown_job_is_not_found(http_store):
    with pytest.raises(NotFound):
        run(http_store.job, 987654)
