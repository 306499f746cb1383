"""The agent API as an agent host sees it: bodies, status codes, ETags, and the history rows
each write leaves behind (naming the token)."""

from __future__ import annotations

import pytest

from memoryadmin.facts import selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import EventAction, FactEvent, FactStatus, MemoryFact, Subject
from memoryadmin.facts.validation import session_tag
from tests.factories import FactFactory

from .conftest import db_state, facts_url, subject_url

pytestmark = pytest.mark.django_db

WIRE_KEYS = {"key", "value", "category", "updated_at", "source_session_id", "version"}
SUBJECT = "FF-0001"


def _by_key(facts: list[dict]) -> dict[str, dict]:
    return {fact["key"]: fact for fact in facts}


def test_reading_an_unknown_traveller_returns_nothing_and_creates_nothing(agent):
    before = db_state()

    response = agent.get(facts_url(SUBJECT))

    assert response.status_code == 200
    assert response.json() == {"facts": []}
    assert db_state() == before


def test_put_facts_saves_them_in_the_upstream_shape_and_records_the_token(agent):
    response = agent.put(
        facts_url(SUBJECT),
        {
            "facts": [
                {"key": "seat_preference", "value": "Prefers aisle seats"},
                {
                    "key": "overnight_flight",
                    "value": "Avoids overnight flights",
                    "category": "constraint",
                },
            ],
            "session_id": "sess-raw-secret-123",
        },
        format="json",
    )

    assert response.status_code == 200
    body = response.json()
    assert body["pending_review"] == []
    facts = _by_key(body["facts"])
    assert set(facts) == {"seat_preference", "overnight_flight"}
    for fact in facts.values():
        assert set(fact) == WIRE_KEYS
        assert fact["source_session_id"] == session_tag("sess-raw-secret-123")
    assert facts["seat_preference"]["category"] == "preference"
    assert facts["overnight_flight"]["category"] == "constraint"
    assert "sess-raw-secret-123" not in response.content.decode()

    events = FactEvent.objects.filter(subject_id=SUBJECT).order_by("key")
    assert [(e.key, e.action, e.actor_kind, e.actor_label) for e in events] == [
        ("overnight_flight", EventAction.CREATED, "agent", "token:agent-host"),
        ("seat_preference", EventAction.CREATED, "agent", "token:agent-host"),
    ]
    assert {e.session_tag for e in events} == {session_tag("sess-raw-secret-123")}

    listed = agent.get(facts_url(SUBJECT)).json()
    assert _by_key(listed["facts"]) == facts


def test_put_facts_replaces_by_key(agent):
    agent.put(
        facts_url(SUBJECT), {"facts": [{"key": "seat_preference", "value": "Aisle"}]}, format="json"
    )

    response = agent.put(
        facts_url(SUBJECT),
        {"facts": [{"key": "seat_preference", "value": "Window"}]},
        format="json",
    )

    assert response.status_code == 200
    assert [(f["key"], f["value"]) for f in response.json()["facts"]] == [
        ("seat_preference", "Window")
    ]
    fact = MemoryFact.objects.get(subject_id=SUBJECT, key="seat_preference")
    assert fact.version == 2
    assert list(FactEvent.objects.filter(subject_id=SUBJECT).values_list("action", flat=True)) == [
        EventAction.CREATED,
        EventAction.UPDATED,
    ]


def test_put_facts_holds_sensitive_facts_for_review_and_says_so(agent):
    response = agent.put(
        facts_url(SUBJECT),
        {
            "facts": [
                {"key": "mobility_aid", "value": "Travels with a wheelchair"},
                {"key": "meal", "value": "Likes the vegetarian meal"},
            ]
        },
        format="json",
    )

    assert response.status_code == 200
    body = response.json()
    assert body["pending_review"] == ["mobility_aid"]
    assert [f["key"] for f in body["facts"]] == ["meal"]
    held = MemoryFact.objects.get(subject_id=SUBJECT, key="mobility_aid")
    assert held.status == FactStatus.PENDING_REVIEW


def test_get_one_fact_with_etag(agent):
    FactFactory(subject_id=SUBJECT, key="seat_preference", value="Prefers aisle seats")

    response = agent.get(facts_url(SUBJECT, "seat_preference"))

    assert response.status_code == 200
    assert response["ETag"] == '"1"'
    body = response.json()
    assert set(body) == WIRE_KEYS
    assert (body["key"], body["value"], body["category"]) == (
        "seat_preference",
        "Prefers aisle seats",
        "preference",
    )
    assert body["source_session_id"] is None


def test_get_one_fact_accepts_unicode_keys_and_normalizes_like_writes(agent):
    FactFactory(subject_id=SUBJECT, key="座位偏好", value="靠走道")
    FactFactory(subject_id=SUBJECT, key="seat_preference", value="Aisle")

    unicode_response = agent.get(facts_url(SUBJECT, "座位偏好"))
    spaced_response = agent.get(facts_url(SUBJECT, "Seat Preference"))

    assert unicode_response.status_code == 200
    assert unicode_response.json()["value"] == "靠走道"
    assert spaced_response.status_code == 200
    assert spaced_response.json()["key"] == "seat_preference"


def test_get_one_missing_fact_is_404_in_the_error_shape(agent):
    response = agent.get(facts_url(SUBJECT, "seat_preference"))

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert set(response.json()["error"]) == {"code", "message", "fields"}


def test_pending_facts_are_invisible_one_by_one(agent):
    FactFactory(
        subject_id=SUBJECT,
        key="mobility_aid",
        value="Uses a wheelchair",
        actor=Actor.agent("other"),
    )
    assert MemoryFact.objects.get(key="mobility_aid").status == FactStatus.PENDING_REVIEW

    assert agent.get(facts_url(SUBJECT, "mobility_aid")).status_code == 404


def test_put_one_creates_201_then_updates_200_with_etags(agent):
    created = agent.put(
        facts_url(SUBJECT, "seat_preference"),
        {"value": "Prefers aisle seats", "session_id": "s-1"},
        format="json",
    )
    updated = agent.put(
        facts_url(SUBJECT, "seat_preference"),
        {"value": "Prefers window seats", "category": "preference"},
        format="json",
    )

    assert created.status_code == 201
    assert created["ETag"] == '"1"'
    assert set(created.json()) == WIRE_KEYS
    assert created.json()["source_session_id"] == session_tag("s-1")
    assert updated.status_code == 200
    assert updated["ETag"] == '"2"'
    assert updated.json()["value"] == "Prefers window seats"
    assert list(
        FactEvent.objects.filter(subject_id=SUBJECT).values_list("action", "actor_label")
    ) == [
        (EventAction.CREATED, "token:agent-host"),
        (EventAction.UPDATED, "token:agent-host"),
    ]


def test_put_one_with_the_same_value_changes_nothing(agent):
    agent.put(facts_url(SUBJECT, "seat_preference"), {"value": "Aisle"}, format="json")
    before = db_state()

    # The same words with stray spaces (a change of case is a correction since issue 20).
    response = agent.put(
        facts_url(SUBJECT, "seat_preference"), {"value": " Aisle  "}, format="json"
    )

    assert response.status_code == 200
    assert response["ETag"] == '"1"'
    assert db_state() == before


def test_put_one_sensitive_fact_is_accepted_but_held(agent):
    response = agent.put(
        facts_url(SUBJECT, "health"), {"value": "Needs insulin on long flights"}, format="json"
    )

    assert response.status_code == 202
    assert response.json() == {"key": "health", "status": "pending_review"}
    assert not response.has_header("ETag")
    assert MemoryFact.objects.get(subject_id=SUBJECT, key="health").status == (
        FactStatus.PENDING_REVIEW
    )


def test_put_one_when_the_traveller_paused_memory_use(agent):
    services.subject_set_preferences(
        subject_id=SUBJECT, actor=Actor.customer(SUBJECT), memory_use_paused=True
    )

    response = agent.put(facts_url(SUBJECT, "seat_preference"), {"value": "Aisle"}, format="json")

    assert response.status_code == 202
    assert response.json() == {"key": "seat_preference", "status": "not_visible"}
    assert agent.get(facts_url(SUBJECT)).json() == {"facts": []}


def test_put_one_with_current_if_match_writes(agent):
    agent.put(facts_url(SUBJECT, "seat_preference"), {"value": "Aisle"}, format="json")

    response = agent.put(
        facts_url(SUBJECT, "seat_preference"),
        {"value": "Window"},
        format="json",
        HTTP_IF_MATCH='"1"',
    )

    assert response.status_code == 200
    assert response["ETag"] == '"2"'


def test_put_one_with_star_if_match_needs_an_existing_fact(agent):
    missing = agent.put(
        facts_url(SUBJECT, "seat_preference"), {"value": "Aisle"}, format="json", HTTP_IF_MATCH="*"
    )
    agent.put(facts_url(SUBJECT, "seat_preference"), {"value": "Aisle"}, format="json")
    present = agent.put(
        facts_url(SUBJECT, "seat_preference"), {"value": "Window"}, format="json", HTTP_IF_MATCH="*"
    )

    assert missing.status_code == 412
    assert present.status_code == 200


@pytest.mark.parametrize("if_match", ['"1"', '"3"', 'W/"2"', "2", "garbage", '"1", "3"'])
def test_put_one_with_stale_if_match_is_412_and_changes_nothing(agent, if_match):
    agent.put(facts_url(SUBJECT, "seat_preference"), {"value": "Aisle"}, format="json")
    agent.put(facts_url(SUBJECT, "seat_preference"), {"value": "Window"}, format="json")
    before = db_state()

    response = agent.put(
        facts_url(SUBJECT, "seat_preference"),
        {"value": "Middle"},
        format="json",
        HTTP_IF_MATCH=if_match,
    )

    assert response.status_code == 412
    assert response.json()["error"]["code"] == "precondition_failed"
    assert db_state() == before
    assert agent.get(facts_url(SUBJECT, "seat_preference")).json()["value"] == "Window"


def test_put_one_if_match_list_containing_the_current_version_writes(agent):
    agent.put(facts_url(SUBJECT, "seat_preference"), {"value": "Aisle"}, format="json")

    response = agent.put(
        facts_url(SUBJECT, "seat_preference"),
        {"value": "Window"},
        format="json",
        HTTP_IF_MATCH='"7", "1"',
    )

    assert response.status_code == 200


def test_delete_erases_the_fact_and_its_past_values(agent):
    agent.put(facts_url(SUBJECT, "seat_preference"), {"value": "Aisle"}, format="json")
    agent.put(facts_url(SUBJECT, "seat_preference"), {"value": "Window"}, format="json")

    response = agent.delete(facts_url(SUBJECT, "seat_preference"))

    assert response.status_code == 204
    assert response.content == b""
    assert agent.get(facts_url(SUBJECT, "seat_preference")).status_code == 404
    assert not FactEvent.objects.filter(subject_id=SUBJECT, key="seat_preference").exists()
    events = list(selectors.fact_history(SUBJECT, "seat_preference"))  # under the key's hash
    assert len(events) == 3
    assert events[-1].action == EventAction.DELETED
    assert events[-1].actor_label == "token:agent-host"
    assert all(e.before is None and e.after is None for e in events[:-1])
    assert events[-1].before is None and set(events[-1].after) == {"erased_fact"}


def test_delete_missing_fact_is_404(agent):
    response = agent.delete(facts_url(SUBJECT, "seat_preference"))

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_delete_with_stale_if_match_is_412_and_keeps_the_fact(agent):
    agent.put(facts_url(SUBJECT, "seat_preference"), {"value": "Aisle"}, format="json")
    agent.put(facts_url(SUBJECT, "seat_preference"), {"value": "Window"}, format="json")
    before = db_state()

    stale = agent.delete(facts_url(SUBJECT, "seat_preference"), HTTP_IF_MATCH='"1"')

    assert stale.status_code == 412
    assert stale.json()["error"]["code"] == "precondition_failed"
    assert db_state() == before

    current = agent.delete(facts_url(SUBJECT, "seat_preference"), HTTP_IF_MATCH='"2"')

    assert current.status_code == 204
    assert not MemoryFact.objects.filter(subject_id=SUBJECT).exists()


def test_search_matches_any_word_in_key_value_or_category(agent):
    FactFactory(subject_id=SUBJECT, key="seat_preference", value="Prefers aisle seats")
    FactFactory(
        subject_id=SUBJECT, key="overnight_flight", value="Avoids red-eyes", category="constraint"
    )
    FactFactory(
        subject_id=SUBJECT, key="travel_party", value="Usually with spouse", category="context"
    )

    aisle = agent.get(facts_url(SUBJECT, "search"), {"q": "AISLE"})
    either = agent.get(facts_url(SUBJECT, "search"), {"q": "spouse constraint"})
    everything = agent.get(facts_url(SUBJECT, "search"))

    assert aisle.status_code == 200
    assert [f["key"] for f in aisle.json()["facts"]] == ["seat_preference"]
    assert {f["key"] for f in either.json()["facts"]} == {"overnight_flight", "travel_party"}
    assert len(everything.json()["facts"]) == 3
    assert all(set(f) == WIRE_KEYS for f in everything.json()["facts"])


def test_search_is_not_a_fact_called_search(agent):
    FactFactory(subject_id=SUBJECT, key="seat_preference", value="Aisle")

    response = agent.get(facts_url(SUBJECT, "search"))

    assert response.status_code == 200
    assert set(response.json()) == {"facts"}


def test_tier_one_puts_constraints_first_and_caps_the_rest(agent):
    FactFactory(
        subject_id=SUBJECT,
        key="no_overnight",
        value="Avoids overnight flights",
        category="constraint",
    )
    for n in range(9):
        FactFactory(subject_id=SUBJECT, key=f"pref_{n}", value=f"Likes thing {n}")

    response = agent.get(subject_url(SUBJECT, "tier-one"))

    assert response.status_code == 200
    facts = response.json()["facts"]
    assert len(facts) == 8  # default cap
    assert facts[0]["key"] == "no_overnight"
    assert [f["key"] for f in facts[1:]] == [f"pref_{n}" for n in range(8, 1, -1)]


def test_clear_forgets_everything_and_bumps_the_generation(agent):
    FactFactory(subject_id=SUBJECT, key="seat_preference", value="Aisle")

    first = agent.post(subject_url(SUBJECT, "clear"))
    second = agent.post(subject_url(SUBJECT, "clear"))

    assert first.status_code == 200
    assert first.json() == {"purge_generation": 1}
    assert second.json() == {"purge_generation": 2}
    assert agent.get(facts_url(SUBJECT)).json() == {"facts": []}
    assert agent.get(subject_url(SUBJECT, "purge-generation")).json() == {"purge_generation": 2}
    cleared = FactEvent.objects.filter(subject_id=SUBJECT, action=EventAction.SUBJECT_CLEARED)
    assert [e.actor_label for e in cleared] == ["token:agent-host", "token:agent-host"]


def test_purge_generation_of_an_unknown_traveller_is_zero(agent):
    response = agent.get(subject_url("never-seen", "purge-generation"))

    assert response.status_code == 200
    assert response.json() == {"purge_generation": 0}
    assert not Subject.objects.filter(subject_id="never-seen").exists()


def test_subject_id_of_128_characters_is_fine(agent):
    long_id = "x" * 128

    response = agent.put(facts_url(long_id, "seat_preference"), {"value": "Aisle"}, format="json")

    assert response.status_code == 201
    assert Subject.objects.filter(subject_id=long_id).exists()
