"""The client records use for the host: saved_memory_prompt(..., turn_id=...) notes what it
injected, recall_memories what it returned; the notes are batched and sent after the turn (in a
background task, off the agent's awaited path), over HTTP and in-process alike. A failing
receipt never fails the turn."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import async_to_sync

from memoryadmin.facts.keyhash import key_digest
from memoryadmin.facts.store import DjangoMemoryStore
from memoryadmin.facts.validation import session_tag
from memoryadmin.usage.models import MemoryUse
from memoryadmin_client import MemoryFact, MemoryTools, flush_uses, saved_memory_prompt
from memoryadmin_client.mcp import next_turn_id
from memoryadmin_client.usage import UseRecorder
from tests.client.conftest import api_token, http_store  # noqa: F401
from tests.support.writes import agent_upsert

SUBJECT = "cl-use-1"


def receipts() -> list[tuple[str, str, str, str]]:
    return sorted(
        MemoryUse.objects.filter(subject_id=SUBJECT).values_list(
            "key_hash", "session_tag", "turn_id", "how"
        )
    )


def expected(turn: str) -> list[tuple[str, str, str, str]]:
    tag = session_tag("sess-1")
    return sorted(
        [
            (key_digest(SUBJECT, "seat_preference"), tag, turn, "injected"),
            (key_digest(SUBJECT, "meal_preference"), tag, turn, "injected"),
            (key_digest(SUBJECT, "seat_preference"), tag, turn, "recalled"),
        ]
    )


async def a_turn(store, turn: str, *, wait_for_background: bool) -> str:
    prompt = await saved_memory_prompt(store, SUBJECT, session_id="sess-1", turn_id=turn)
    tools = MemoryTools(store, SUBJECT, "sess-1", turn_id=turn)
    recalled = await tools.run("recall_memories", {"topic": "seat"})
    assert "Aisle" in recalled
    if wait_for_background:
        await asyncio.sleep(0.5)  # the batch goes by itself, after the turn
    else:
        await flush_uses(store)
    return prompt


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("background", [True, False], ids=["background", "flushed"])
def test_over_http_the_turns_receipts_arrive_after_it(http_store, background):  # noqa: F811
    agent_upsert(SUBJECT, ("seat_preference", "Aisle"), ("meal_preference", "Vegetarian"))
    prompt = async_to_sync(a_turn)(http_store, "t-1", wait_for_background=background)
    assert "Aisle" in prompt
    assert receipts() == expected("t-1")


@pytest.mark.django_db(transaction=True)
def test_in_process_the_store_records_them_too():
    agent_upsert(SUBJECT, ("seat_preference", "Aisle"), ("meal_preference", "Vegetarian"))
    store = DjangoMemoryStore(native=False)
    async_to_sync(a_turn)(store, "t-2", wait_for_background=False)
    assert receipts() == expected("t-2")


def test_without_a_turn_id_nothing_is_noted():
    class Store:
        calls: list = []

        async def upsert_facts(self, subject_id, facts):
            raise AssertionError("not called")

        async def get_facts(self, subject_id):
            return [MemoryFact(key="seat", value="Aisle")]

        async def record_uses(self, subject_id, turns):
            self.calls.append(turns)

    store = Store()
    async_to_sync(saved_memory_prompt)(store, SUBJECT)
    assert async_to_sync(flush_uses)(store) == 0 and Store.calls == []


def test_a_failing_receipt_never_fails_the_turn(caplog):
    class Down:
        async def upsert_facts(self, subject_id, facts):
            raise AssertionError("not called")

        async def get_facts(self, subject_id):
            return [MemoryFact(key="seat", value="Aisle")]

        async def record_uses(self, subject_id, turns):
            raise ConnectionError("down")

    store = Down()

    async def turn() -> str:
        text = await saved_memory_prompt(store, SUBJECT, session_id="s", turn_id="t")
        return text, await flush_uses(store)

    text, sent = async_to_sync(turn)()
    assert "Aisle" in text and sent == 1
    assert "use receipts not sent: ConnectionError" in caplog.text


def test_notes_of_many_turns_go_as_one_call_per_traveller():
    sent: list = []

    class Store:
        async def record_uses(self, subject_id, turns):
            sent.append((subject_id, [turn["turn_id"] for turn in turns]))

    store = Store()
    recorder = UseRecorder(store)
    for n in range(50):
        recorder.note("a", session_id="s", turn_id=f"t{n}", how="injected", keys=["seat"])
        recorder.note("b", session_id="s", turn_id=f"t{n}", how="recalled", keys=["meal"])
    assert async_to_sync(recorder.flush)() == 100
    assert [subject for subject, _ in sent] == ["a", "b"]
    assert all(len(turns) == 50 for _, turns in sent)


def test_the_mcp_server_numbers_its_turns():
    assert next_turn_id("mcp-0") == "mcp-1" and next_turn_id("mcp-41") == "mcp-42"
