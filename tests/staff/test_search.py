"""The travellers search never reads a sensitive value: whoever searches (viewer, editor,
privacy admin) finds no traveller by the words or the topic of a sensitive fact, while the same
search finds a fact that is not sensitive; the results page names no sensitive topic."""

from __future__ import annotations

import pytest
from django.db import connection

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from tests.factories import FactFactory

pytestmark = pytest.mark.django_db

TRAVELLERS = ("FF-5001", "FF-5002", "FF-5003")


@pytest.fixture
def facts() -> None:
    FactFactory(subject_id="FF-5001", key="medical_note", value="Carries insulin pens")
    services.fact_flag_sensitive(subject_id="FF-5001", key="medical_note", actor=Actor.system("t"))
    FactFactory(subject_id="FF-5002", key="meal_preference", value="Halal meals")
    services.fact_flag_sensitive(
        subject_id="FF-5002", key="meal_preference", actor=Actor.system("t")
    )
    FactFactory(subject_id="FF-5003", key="seat_preference", value="Prefers aisle seats")
    FactFactory(subject_id="FF-5003", key="travel_note", value="Carries a guitar")


@pytest.mark.parametrize("who", ["viewer", "editor", "privacy_admin"])
def test_no_role_finds_a_traveller_by_the_words_of_a_sensitive_fact(client, request, facts, who):
    client.force_login(request.getfixturevalue(who))

    def found(query: str) -> set[str]:
        response = client.get("/staff/travellers/", {"q": query})
        assert response.status_code == 200
        body = response.content.decode()
        return {s for s in TRAVELLERS if s in body}

    assert found("insulin") == set()
    assert found("Halal") == set()
    assert found("carries") == {"FF-5003"}  # the same word in a fact that is not sensitive
    assert found("medical") == set()  # nor by the topic of a sensitive fact
    assert found("meal") == set()
    assert found("seat") == {"FF-5003"}  # by topic: the label "Seat preference"
    assert found("座位") == {"FF-5003"}  # and the Chinese label
    assert found("FF-500") == set(TRAVELLERS)  # by id, for everyone


def test_the_results_page_names_no_sensitive_topic(client, editor, facts):
    client.force_login(editor)
    for query in ("FF-500", "carries"):  # a list of results, not one traveller's page
        response = client.get("/staff/travellers/", {"q": query})
        assert response.status_code == 200 and "FF-5003" in response.content.decode()
        body = response.content.decode().lower()
        assert "insulin" not in body and "medical" not in body and "halal" not in body


def test_the_search_box_suggests_no_sensitive_word(client, viewer):
    client.force_login(viewer)
    body = client.get("/staff/travellers/").content.decode()
    placeholder = body.split('placeholder="', 1)[1].split('"', 1)[0]
    for word in ("wheelchair", "insulin", "halal", "pregnan", "medical", "diabet"):
        assert word not in placeholder.lower()


def test_the_trigram_index_holds_no_sensitive_value(facts):
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_fact_value_trgm'")
        (definition,) = cursor.fetchone()
    assert "gin_trgm_ops" in definition and "WHERE (NOT sensitive)" in definition
