"""save_memory's `evidence`: the assistant's quote of the traveller, through the real client
against a live server. Kept as "saved by the assistant" (never shown as the traveller's words)
until the host posts the turn; then held to extraction's check against the traveller's messages
of that turn: found, it becomes "you said on ..."; not found (a paraphrase, the assistant's own
sentence) it stays the assistant's; a quote the write filter refuses is dropped, the fact kept.
The in-process store takes the same quotes."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync

from memoryadmin.extraction.models import ExtractionJob, JobStatus
from memoryadmin.facts import selectors
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent
from memoryadmin.facts.store import DjangoMemoryStore
from memoryadmin.portal.display import why_sentence
from memoryadmin.testing.fake_anthropic import FakeAnthropic, tool_use
from memoryadmin.usage.display import why_known
from memoryadmin_client import MemoryTools
from memoryadmin_client.tools import SAVE_MEMORY_TOOL
from tests.client.conftest import api_token, http_store  # noqa: F401
from tests.extraction.conftest import fake_anthropic  # noqa: F401

SUBJECT = "cl-quote-1"
SAID = "I always sit on the aisle, my knees need it"
TURN = [
    {"role": "user", "text": f"Hi. {SAID}. And no overnight flights please."},
    {"role": "assistant", "text": "Noted: you prefer overnight flights to be avoided."},
]


def test_the_tool_definition_offers_an_optional_short_quote() -> None:
    from memoryadmin.facts.validation import EVIDENCE_MAX_LENGTH

    schema = SAVE_MEMORY_TOOL["input_schema"]
    assert schema["properties"]["evidence"]["maxLength"] == EVIDENCE_MAX_LENGTH == 200
    assert "evidence" not in schema["required"]


async def _host_turn(store: Any) -> dict[str, str]:
    tools = MemoryTools(store, SUBJECT, "sess-q")
    said = {
        "seat": await tools.call(
            "save_memory",
            {"key": "seat_preference", "value": "Prefers aisle seats", "evidence": SAID},
        ),
        # the assistant's own sentence, not the traveller's
        "overnight": await tools.call(
            "save_memory",
            {
                "key": "overnight_flights",
                "value": "Avoids overnight flights",
                "category": "constraint",
                "evidence": "you prefer overnight flights to be avoided",
            },
        ),
        # a paraphrase
        "knees": await tools.call(
            "save_memory",
            {
                "key": "legroom",
                "value": "Needs legroom",
                "evidence": "my knees hurt in tight seats",
            },
        ),
        "phone": await tools.call(
            "save_memory",
            {"key": "contact_time", "value": "Mornings", "evidence": "ring me on +1 415 555 0134"},
        ),
        "long": await tools.call(
            "save_memory", {"key": "meal_preference", "value": "Vegetarian", "evidence": "v" * 201}
        ),
    }
    assert all(not result.is_error for result in said.values()), said
    return {name: result.text for name, result in said.items()}


def _quotes() -> dict[str, tuple[str, str, str]]:
    return {
        fact.key: (fact.evidence, fact.evidence_origin, why_known(fact).kind)
        for fact in selectors.subject_facts(SUBJECT)
    }


@pytest.mark.django_db(transaction=True)
def test_a_quote_is_the_assistants_until_the_posted_turn_shows_the_traveller_said_it(
    http_store: Any,  # noqa: F811
    fake_anthropic: FakeAnthropic,  # noqa: F811
) -> None:
    async_to_sync(_host_turn)(http_store)
    assert _quotes() == {
        "seat_preference": (SAID, "agent", "saved"),
        "overnight_flights": ("you prefer overnight flights to be avoided", "agent", "saved"),
        "legroom": ("my knees hurt in tight seats", "agent", "saved"),
        "contact_time": ("", "agent", "saved"),  # refused by the write filter: fact kept
        "meal_preference": ("", "agent", "saved"),  # over 200 characters: not sent
    }

    fake_anthropic.script(tool_use([]))  # the turn's extraction learns nothing new itself
    async_to_sync(http_store.post_turn)(SUBJECT, session_id="sess-q", turn_id="t-1", messages=TURN)
    job = ExtractionJob.objects.get(subject_id=SUBJECT)
    assert job.status == JobStatus.SUCCEEDED, job.reason
    quotes = _quotes()
    assert quotes["seat_preference"] == (SAID, "extraction", "said")  # "you said on ..."
    assert quotes["overnight_flights"][1:] == ("agent", "saved")  # the assistant's words
    assert quotes["legroom"][1:] == ("agent", "saved")  # a paraphrase
    event = FactEvent.objects.filter(subject_id=SUBJECT, key="seat_preference").latest("id")
    assert "found in turn t-1" in event.reason
    fact = selectors.subject_fact(SUBJECT, "seat_preference")
    assert fact.version == 1  # confirming the quote is not a new version
    said = why_sentence(fact)
    assert "You said on" in said and SAID in said
    # the assistant's own sentence is never the traveller's words on their portal
    assert why_sentence(selectors.subject_fact(SUBJECT, "overnight_flights")) == ""


@pytest.mark.django_db(transaction=True)
def test_a_turn_that_is_never_posted_leaves_every_quote_the_assistants(
    http_store: Any,  # noqa: F811
) -> None:
    async_to_sync(_host_turn)(http_store)
    assert {origin for _, origin, _ in _quotes().values()} == {"agent"}


@pytest.mark.django_db(transaction=True)
def test_the_in_process_store_takes_the_same_quote() -> None:
    store = DjangoMemoryStore(actor=Actor.agent("host-q"))
    tools = MemoryTools(store, SUBJECT, "sess-q")
    result = async_to_sync(tools.call)(
        "save_memory", {"key": "seat_preference", "value": "Prefers aisle seats", "evidence": SAID}
    )
    assert not result.is_error
    assert _quotes()["seat_preference"] == (SAID, "agent", "saved")
