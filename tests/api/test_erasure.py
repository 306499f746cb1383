"""Deleting through the API erases every copy, including stored idempotent replies."""

import pytest

from tests.support.dbscan import occurrences

from .conftest import facts_url, subject_url

pytestmark = pytest.mark.django_db
VALUE = "Prefers seat 31K by the window Qv8"


@pytest.mark.parametrize("how", ["delete", "clear"])
def test_a_deleted_value_survives_nowhere_not_even_in_replayable_responses(make_agent, how):
    agent = make_agent()
    put = agent.put(
        facts_url("T-erase", "seat_preference"),
        {"value": VALUE, "session_id": "s-1"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="put-1",
    )
    assert put.status_code == 201
    assert set(occurrences(VALUE)) == {"memory_fact", "memory_fact_event", "api_idempotency_record"}

    if how == "delete":
        response = agent.delete(facts_url("T-erase", "seat_preference"))
        assert response.status_code == 204
    else:
        response = agent.post(subject_url("T-erase", "clear"), format="json")
        assert response.status_code == 200
    assert occurrences(VALUE) == {}


def test_agent_writes_are_refused_while_the_traveller_paused_learning(make_agent):
    from memoryadmin.facts import services
    from memoryadmin.facts.actors import Actor

    services.subject_set_preferences(
        subject_id="T-paused", memory_paused=True, actor=Actor.customer("T-paused")
    )
    agent = make_agent()
    response = agent.put(facts_url("T-paused", "seat"), {"value": "Aisle"}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "learning_paused"
    assert agent.get(facts_url("T-paused")).json() == {"facts": []}
