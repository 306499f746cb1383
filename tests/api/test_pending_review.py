"""Reading a fact that is waiting for review says so (issue 23)."""

from __future__ import annotations

import pytest

from memoryadmin.api.models import Scope
from memoryadmin.facts.actors import Actor
from tests.factories import FactFactory

from .conftest import facts_url

pytestmark = pytest.mark.django_db


def test_a_fact_held_for_review_is_404_pending_review(make_agent):
    FactFactory(
        subject_id="FF-9", key="health_note", value="Carries insulin", actor=Actor.agent("h")
    )
    agent = make_agent(Scope.MEMORY_READ.value)

    response = agent.get(facts_url("FF-9", "health_note"))

    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "pending_review" and "review" in error["message"]
    assert "insulin" not in response.content.decode()
    missing = agent.get(facts_url("FF-9", "no_such_key"))
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
