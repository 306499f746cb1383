"""Receipts name the version (issue 33): the reads give each fact's version, the client names it
back, and the receipt keeps it; without one, the receipt takes the version current at recording
and says so (`version_assumed`)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from memoryadmin.facts.store import DjangoMemoryStore
from memoryadmin.usage.models import MemoryUse
from memoryadmin.usage.services import TurnUse, uses_record
from memoryadmin_client import MemoryTools, flush_uses, saved_memory_prompt
from tests.api.conftest import subject_url
from tests.client.conftest import api_token, http_store  # noqa: F401
from tests.support.writes import agent_upsert

SUBJECT = "ver-1"


def versions(subject_id: str = SUBJECT) -> list[tuple[str, str, int | None, bool]]:
    return sorted(
        MemoryUse.objects.filter(subject_id=subject_id).values_list(
            "turn_id", "how", "version", "version_assumed"
        )
    )


@pytest.fixture
def seat_at_two():
    """seat_preference at version 2, meal at version 1."""
    agent_upsert(SUBJECT, ("seat_preference", "Window"), ("meal", "Vegetarian"))
    agent_upsert(SUBJECT, ("seat_preference", "Aisle"))


@pytest.mark.django_db
def test_the_reads_give_each_facts_version(agent, seat_at_two):
    for path in ("tier-one", "facts"):
        body = agent.get(subject_url(SUBJECT, path)).json()
        assert {f["key"]: f["version"] for f in body["facts"]} == {
            "seat_preference": 2,
            "meal": 1,
        }
    one = agent.get(subject_url(SUBJECT, "facts/seat_preference"))
    assert one.json()["version"] == 2 and one["ETag"] == '"2"'


@pytest.mark.django_db
def test_a_named_version_is_kept_and_a_missing_one_is_the_current_one_marked_so(agent, seat_at_two):
    response = agent.post(
        subject_url(SUBJECT, "usage"),
        {
            "session_id": "s",
            "turn_id": "t-1",
            "injected": [{"key": "seat_preference", "version": 1}, "meal"],
            # a version the fact never reached cannot have been seen: the current one, marked
            "recalled": [{"key": "Seat Preference", "version": 7}],
        },
        format="json",
    )
    assert response.status_code == 202 and response.json() == {"recorded": 3}
    assert versions() == [
        ("t-1", "injected", 1, False),
        ("t-1", "injected", 1, True),  # meal: no version named, its current one (1)
        ("t-1", "recalled", 2, True),
    ]


@pytest.mark.django_db
def test_the_slow_path_reads_versions_the_same_way(agent, seat_at_two):
    """A body the fast reader declines (an unknown member inside a turn is refused, so use a
    key-only item beside a versioned one through the serializer: `version` null)."""
    response = agent.post(
        subject_url(SUBJECT, "usage"),
        {
            "turns": [
                {
                    "session_id": "s",
                    "turn_id": "t-2",
                    "injected": [{"key": "seat_preference", "version": None}],
                    "recalled": [{"key": "meal", "version": 1}],
                }
            ]
        },
        format="json",
    )
    assert response.status_code == 202, response.content
    assert versions() == [("t-2", "injected", 2, True), ("t-2", "recalled", 1, False)]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "item, message",
    [
        ({"key": "seat_preference", "version": 0}, "whole number"),
        ({"key": "seat_preference", "version": "2"}, "whole number"),
        ({"key": "seat_preference", "version": True}, "whole number"),
        ({"key": "seat_preference", "version": 2**31}, "whole number"),
        ({"version": 2}, "Must be a key"),
        ({"key": "seat_preference", "value": "Aisle"}, "Must be a key"),
        (5, "Must be a key"),
    ],
)
def test_a_bad_item_is_a_400_naming_it(agent, seat_at_two, item, message):
    response = agent.post(
        subject_url(SUBJECT, "usage"),
        {"session_id": "s", "turn_id": "t", "injected": [item]},
        format="json",
    )
    assert response.status_code == 400
    assert message in str(response.json()), response.json()
    assert not MemoryUse.objects.exists()


@pytest.mark.django_db
def test_a_posted_turns_used_member_keeps_its_versions(make_agent, seat_at_two):
    from memoryadmin.api.models import Scope
    from memoryadmin.usage.services import uses_take_from_jobs

    host = make_agent(Scope.TURNS_WRITE.value)
    response = host.post(
        subject_url(SUBJECT, "turns"),
        {
            "session_id": "s",
            "turn_id": "t-3",
            "messages": [{"role": "user", "text": "Hello"}],
            "used": {"injected": [{"key": "seat_preference", "version": 1}], "recalled": []},
        },
        format="json",
    )
    assert response.status_code in (200, 202), response.content
    uses_take_from_jobs()
    assert versions() == [("t-3", "injected", 1, False)]


@pytest.mark.django_db
def test_the_service_takes_the_current_version_when_none_is_named(seat_at_two):
    written = uses_record(
        subject_id=SUBJECT,
        uses=[TurnUse("s", "t-4", injected=["seat_preference"], recalled=[])],
    )
    assert written == 1 and versions() == [("t-4", "injected", 2, True)]


async def _turn(store, turn: str) -> None:
    await saved_memory_prompt(store, SUBJECT, session_id="s", turn_id=turn)
    tools = MemoryTools(store, SUBJECT, "s", turn_id=turn)
    assert "Window" in await tools.run("recall_memories", {"topic": "seat"})
    # The fact changes before the receipts go: they still name what the agent had.
    from asgiref.sync import sync_to_async

    await sync_to_async(agent_upsert)(SUBJECT, ("seat_preference", "Aisle"))
    await flush_uses(store)


@pytest.mark.django_db(transaction=True)
def test_over_http_the_client_names_the_version_it_read(http_store):  # noqa: F811
    agent_upsert(SUBJECT, ("seat_preference", "Window"))
    async_to_sync(_turn)(http_store, "t-5")
    assert versions() == [("t-5", "injected", 1, False), ("t-5", "recalled", 1, False)]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("native", [False, True], ids=["sync", "native"])
def test_in_process_the_store_names_it_too(native):
    agent_upsert(SUBJECT, ("seat_preference", "Window"))
    async_to_sync(_turn)(DjangoMemoryStore(native=native), "t-6")
    assert versions() == [("t-6", "injected", 1, False), ("t-6", "recalled", 1, False)]
