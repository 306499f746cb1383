"""POST .../usage and the `used` member of POST .../turns: append-only receipts, one statement
per batch, unknown keys ignored, never a value or key stored, a clear 400 for a bad body."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memoryadmin.api.models import Scope
from memoryadmin.facts.keyhash import key_digest
from memoryadmin.facts.validation import session_tag
from memoryadmin.usage.models import MemoryUse
from tests.api.conftest import subject_url
from tests.support.writes import agent_upsert

pytestmark = [pytest.mark.django_db]
SUBJECT = "use-1"


@pytest.fixture
def held():
    agent_upsert(
        SUBJECT, ("seat_preference", "Aisle"), ("meal", "Vegetarian"), ("home_airport", "TPE")
    )


def receipts(subject_id: str = SUBJECT) -> list[tuple[str, str, str, str]]:
    return sorted(
        MemoryUse.objects.filter(subject_id=subject_id).values_list(
            "key_hash", "session_tag", "turn_id", "how"
        )
    )


def test_a_turns_receipts_are_stored_by_hash_and_unknown_keys_ignored(agent, held):
    response = agent.post(
        subject_url(SUBJECT, "usage"),
        {
            "session_id": "sess-1",
            "turn_id": "t-1",
            "injected": ["seat_preference", "meal", "no_such_key"],
            "recalled": ["Home Airport"],
        },
        format="json",
    )
    assert response.status_code == 202, response.content
    tag = session_tag("sess-1")
    assert receipts() == sorted(
        [
            (key_digest(SUBJECT, "seat_preference"), tag, "t-1", "injected"),
            (key_digest(SUBJECT, "meal"), tag, "t-1", "injected"),
            (key_digest(SUBJECT, "home_airport"), tag, "t-1", "recalled"),
        ]
    )
    assert not MemoryUse.objects.filter(key_hash__contains="seat").exists()


def test_a_burst_of_turns_is_one_statement_per_batch(agent, held):
    """One SELECT of the named facts, then the rows: one COPY for 600 receipts."""
    turns = [
        {
            "session_id": f"s-{n % 3}",
            "turn_id": f"t-{n}",
            "injected": ["seat_preference", "meal"],
            "recalled": ["home_airport"],
        }
        for n in range(200)
    ]
    with CaptureQueriesContext(connection) as queries:
        response = agent.post(subject_url(SUBJECT, "usage"), {"turns": turns}, format="json")
    assert response.status_code == 202
    writes = [
        q["sql"]
        for q in queries.captured_queries
        if "memory_use" in q["sql"] and not q["sql"].lstrip().startswith("SELECT")
    ]
    assert len(writes) == 1 and writes[0].startswith("COPY memory_use"), writes
    assert MemoryUse.objects.filter(subject_id=SUBJECT).count() == 600


def test_another_travellers_keys_are_not_recorded(agent, held):
    agent_upsert("use-2", ("only_b_has_this", "x"))
    agent.post(
        subject_url(SUBJECT, "usage"),
        {"session_id": "s", "turn_id": "t", "injected": ["only_b_has_this"]},
        format="json",
    )
    assert receipts() == [] and receipts("use-2") == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"session_id": "s", "turn_id": "t", "injected": "seat"}, "injected"),
        ({"session_id": "s", "turn_id": "t", "injected": [1]}, "injected"),
        ({"injected": ["seat_preference"]}, "turn_id"),
        ({"turns": [{"session_id": "s"}]}, "turns"),
        ({"session_id": "s", "turn_id": "t" * 65}, "turn_id"),
        ({}, "turn_id"),
        ({"session_id": "s"}, "turn_id"),
        ({"session_id": "s", "turn_id": "t", "recalled": ["a\x00b"]}, "recalled"),
        ({"turns": [{"session_id": "s", "turn_id": "t", "injected": [""]}]}, "turns"),
    ],
)
def test_a_bad_body_is_a_400_naming_the_field_and_writes_nothing(agent, held, body, field):
    response = agent.post(subject_url(SUBJECT, "usage"), body, format="json")
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert any(name.startswith(field) for name in fields), fields
    assert receipts() == []


def test_receipts_need_memory_read(make_agent, held):
    writer = make_agent(Scope.TURNS_WRITE.value)
    response = writer.post(
        subject_url(SUBJECT, "usage"), {"session_id": "s", "turn_id": "t"}, format="json"
    )
    assert response.status_code == 403
    assert receipts() == []


def test_a_posted_turn_may_carry_its_receipts(make_agent, held):
    host = make_agent(Scope.TURNS_WRITE.value)
    response = host.post(
        subject_url(SUBJECT, "turns"),
        {
            "session_id": "sess-9",
            "turn_id": "t-9",
            "messages": [{"role": "user", "text": "hi"}],
            "used": {"injected": ["seat_preference"], "recalled": ["meal", "unknown"]},
        },
        format="json",
    )
    assert response.status_code == 202, response.content
    assert sorted(how for _, _, _, how in receipts()) == ["injected", "recalled"]


def test_a_saved_fact_may_carry_the_assistants_quote(agent):
    """save_memory's evidence: kept as "saved by the assistant" (it cannot be checked against a
    turn here), dropped when the write filter refuses it; the fact is kept either way."""
    from memoryadmin.facts import selectors
    from tests.api.conftest import facts_url

    response = agent.put(
        facts_url("use-3"),
        {
            "facts": [
                {"key": "seat_preference", "value": "Aisle", "evidence": "aisle, always"},
                {"key": "meal", "value": "Vegetarian", "evidence": "mail me at a@b.example"},
            ]
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    seat = selectors.subject_fact("use-3", "seat_preference")
    meal = selectors.subject_fact("use-3", "meal")
    assert (seat.evidence, seat.evidence_origin) == ("aisle, always", "agent")
    assert meal.evidence == "" and meal.value == "Vegetarian"


def test_awkward_turn_ids_survive_the_copy(agent, held):
    """Backslashes, tabs and newlines are COPY's own syntax: they are escaped, never parsed."""
    from memoryadmin.facts.validation import sanitize_text

    turn_id = "t\\1\tx\ny 旅"
    response = agent.post(
        subject_url(SUBJECT, "usage"),
        {"session_id": "s", "turn_id": turn_id, "injected": ["meal"]},
        format="json",
    )
    assert response.status_code == 202, response.content
    assert response.json() == {"recorded": 1}
    assert [turn for _, _, turn, _ in receipts()] == [sanitize_text(turn_id)]
