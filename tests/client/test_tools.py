"""save_memory / recall_memories as the model sees them: the tool definitions, and the texts
`MemoryTools.run` returns, over the in-process store and once over HTTP."""

from __future__ import annotations

import json

import pytest

from memoryadmin.facts import selectors
from memoryadmin.facts.models import ActorKind, FactEvent, FactStatus, MemoryFact, Origin
from memoryadmin.facts.store import DjangoMemoryStore
from memoryadmin.facts.validation import session_tag
from memoryadmin_client.http import HttpMemoryStore
from memoryadmin_client.tools import (
    RECALL_MEMORIES_TOOL,
    SAVE_MEMORY_TOOL,
    MemoryTools,
)
from tests.facts.store_contract import run

from .conftest import TOKEN_NAME
from .servers import free_port

SUBJECT = "t-tools"


@pytest.fixture
def tools(db) -> MemoryTools:
    return MemoryTools(DjangoMemoryStore(session_id="sess-tools"), SUBJECT, "sess-tools")


def use(tools: MemoryTools, name: str, tool_input: object) -> str:
    return run(tools.run, name, tool_input)


def records(text: str) -> list[tuple[str, str, str]]:
    """(key, value, category) of each fact line inside the <saved_memory> block."""
    inside = text.split("<saved_memory>\n", 1)[1].split("\n</saved_memory>", 1)[0]
    rows = [json.loads(line) for line in inside.splitlines() if line.startswith("{")]
    return [(row["key"], row["value"], row["category"]) for row in rows]


def stored(subject: str = SUBJECT) -> dict[str, tuple[str, str]]:
    return {f.key: (f.value, f.category) for f in MemoryFact.objects.filter(subject_id=subject)}


# --- the definitions ---------------------------------------------------------------------------


def test_tool_definitions_have_the_documented_shape():
    save, recall = SAVE_MEMORY_TOOL, RECALL_MEMORIES_TOOL
    assert set(save) == set(recall) == {"name", "description", "input_schema"}
    assert (save["name"], recall["name"]) == ("save_memory", "recall_memories")
    props = save["input_schema"]["properties"]
    assert props["key"] == props["key"] | {"type": "string", "maxLength": 64}
    assert props["value"] == props["value"] | {"type": "string", "maxLength": 200}
    assert props["category"]["enum"] == ["preference", "constraint", "context"]
    assert save["input_schema"]["required"] == ["key", "value"]
    assert "replace" in save["description"].lower() and "key" in save["description"]
    topic = recall["input_schema"]["properties"]["topic"]
    assert topic == topic | {"type": "string", "maxLength": 100}
    assert recall["input_schema"]["required"] == ["topic"]


def test_tools_property_hands_out_copies(tools):
    listed = tools.tools
    assert [tool["name"] for tool in listed] == ["save_memory", "recall_memories"]
    listed[0]["cache_control"] = {"type": "ephemeral"}
    assert "cache_control" not in tools.tools[0] and "cache_control" not in SAVE_MEMORY_TOOL


def test_definitions_are_accepted_by_the_anthropic_sdk_types():
    """The SDK's own ToolParam type, so a typo in a field name would show up here."""
    from anthropic.types import ToolParam
    from pydantic import TypeAdapter

    for tool in (SAVE_MEMORY_TOOL, RECALL_MEMORIES_TOOL):
        TypeAdapter(ToolParam).validate_python(tool)


# --- save ------------------------------------------------------------------------------------


def test_save_answers_with_the_key_as_stored_and_stores_it(tools):
    answer = use(tools, "save_memory", {"key": "Seat Preference", "value": "Prefers aisle seats"})
    assert answer == "Saved: seat_preference."
    assert stored() == {"seat_preference": ("Prefers aisle seats", "preference")}
    row = MemoryFact.objects.get(subject_id=SUBJECT)
    assert row.origin == Origin.AGENT
    assert row.source_session_id == session_tag("sess-tools")


def test_save_with_a_category(tools):
    answer = use(
        tools,
        "save_memory",
        {
            "key": "overnight_flights",
            "value": "Avoids overnight flights",
            "category": "Constraint",
        },
    )
    assert answer == "Saved: overnight_flights."
    assert stored() == {"overnight_flights": ("Avoids overnight flights", "constraint")}


def test_saving_under_the_same_key_replaces(tools):
    use(tools, "save_memory", {"key": "meal_preference", "value": "Vegetarian meals"})
    use(tools, "save_memory", {"key": "meal_preference", "value": "Prefers pescatarian meals"})
    assert stored() == {"meal_preference": ("Prefers pescatarian meals", "preference")}
    assert records(use(tools, "recall_memories", {"topic": "meal"})) == [
        ("meal_preference", "Prefers pescatarian meals", "preference")
    ]


def test_an_overlong_value_is_cut_like_the_server_cuts_it(tools):
    answer = use(tools, "save_memory", {"key": "notes", "value": "Likes quiet cabins " * 20})
    assert answer == "Saved: notes."
    value = MemoryFact.objects.get(subject_id=SUBJECT).value
    assert len(value) == 200 and value.endswith("...[truncated]")


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        ("Card 4111 1111 1111 1111", "4111"),
        # Full-width digits, as Chinese and Japanese keyboards type them (issue 20).
        ("Card ４１１１ １１１１ １１１１ １１１１", "４１１１"),
        ("Call ＋８８６ ９１２ ３４５ ６７８", "９１２"),
    ],
)
def test_a_blocked_value_is_refused_without_repeating_it(tools, value, secret):
    result = run(tools.call, "save_memory", {"key": "payment_card", "value": value})
    assert result.is_error
    assert result.text.startswith("Not saved:")
    assert secret not in result.text and value not in result.text
    assert stored() == {}


@pytest.mark.parametrize(
    ("tool_input", "expected"),
    [
        ({"key": "!!!", "value": "Prefers aisle seats"}, "key"),
        ({"key": "seat", "value": "   "}, "value"),
        ({"key": "seat"}, "value"),
        ({"value": "Prefers aisle seats"}, "key"),
        ({"key": 42, "value": "Prefers aisle seats"}, "key"),
        ({"key": "seat", "value": "Aisle", "category": "urgent"}, "preference, constraint"),
        ("seat=aisle", "key and a value"),
        (None, "key and a value"),
    ],
)
def test_invalid_saves_explain_what_is_wrong(tools, tool_input, expected):
    result = run(tools.call, "save_memory", tool_input)
    assert result.is_error
    assert result.text.startswith("Not saved")
    assert expected in result.text
    assert stored() == {}


def test_a_fact_held_for_review_is_saved_but_not_recalled(tools):
    assert (
        use(
            tools,
            "save_memory",
            {
                "key": "mobility",
                "value": "Uses a wheelchair at connections",
            },
        )
        == "Saved: mobility."
    )
    assert MemoryFact.objects.get(subject_id=SUBJECT).status == FactStatus.PENDING_REVIEW
    assert use(tools, "recall_memories", {"topic": "wheelchair"}) == (
        "No saved memories about wheelchair."
    )


# --- recall ----------------------------------------------------------------------------------


def test_recall_lists_matching_facts_one_per_line(tools):
    use(tools, "save_memory", {"key": "seat_preference", "value": "Prefers aisle seats"})
    use(
        tools,
        "save_memory",
        {
            "key": "overnight_flights",
            "value": "Avoids overnight flights",
            "category": "constraint",
        },
    )
    use(
        tools,
        "save_memory",
        {
            "key": "travel_party",
            "value": "Usually travels with spouse",
            "category": "context",
        },
    )
    assert records(use(tools, "recall_memories", {"topic": "aisle spouse"})) == [
        ("seat_preference", "Prefers aisle seats", "preference"),
        ("travel_party", "Usually travels with spouse", "context"),
    ]


def test_recall_with_nothing_found_says_so(tools):
    assert use(tools, "recall_memories", {"topic": "pizza"}) == "No saved memories about pizza."
    assert use(tools, "recall_memories", {"topic": ""}) == (
        "No saved memories about this traveller."
    )


def test_recall_caps_the_list_and_says_how_many_more(db):
    tools = MemoryTools(DjangoMemoryStore(), SUBJECT, recall_limit=2)
    for index in range(4):
        use(tools, "save_memory", {"key": f"pref_{index}", "value": f"Preference {index}"})
    text = use(tools, "recall_memories", {"topic": "preference"})
    assert [key for key, _, _ in records(text)] == ["pref_0", "pref_1"]
    assert text.splitlines()[-1] == "(2 more; ask about a narrower topic.)"


def test_recall_without_a_topic_is_an_error_text(tools):
    result = run(tools.call, "recall_memories", {})
    assert result.is_error and "topic" in result.text


def test_unknown_tool_is_an_error_text_not_an_exception(tools):
    result = run(tools.call, "book_flight", {"to": "LIS"})
    assert result.is_error
    assert "book_flight" in result.text and "save_memory" in result.text


def test_profile_lists_tier_one(tools):
    empty = run(tools.profile)
    assert records(empty) == [] and "(nothing saved yet)" in empty
    use(
        tools,
        "save_memory",
        {
            "key": "overnight_flights",
            "value": "Avoids overnight flights",
            "category": "constraint",
        },
    )
    assert records(run(tools.profile)) == [
        ("overnight_flights", "Avoids overnight flights", "constraint")
    ]


# --- over HTTP ---------------------------------------------------------------------------------


def test_the_tools_over_http_save_recall_and_audit_as_the_token(live_server, api_token):
    store = HttpMemoryStore(live_server.url, api_token)
    tools = MemoryTools(store, "t-http-tools", "sess-conversation-7")
    assert (
        use(
            tools,
            "save_memory",
            {
                "key": "Seat Preference",
                "value": "Prefers aisle seats",
            },
        )
        == "Saved: seat_preference."
    )
    assert records(use(tools, "recall_memories", {"topic": "aisle"})) == [
        ("seat_preference", "Prefers aisle seats", "preference")
    ]
    blocked = run(tools.call, "save_memory", {"key": "email", "value": "jane.doe@example.com"})
    assert blocked.is_error and "jane.doe" not in blocked.text
    event = FactEvent.objects.get(subject_id="t-http-tools", key="seat_preference")
    assert (event.actor_kind, event.actor_label) == (ActorKind.AGENT, f"token:{TOKEN_NAME}")
    assert event.session_tag == session_tag("sess-conversation-7")
    assert [f.key for f in selectors.facts_for_agent("t-http-tools")] == ["seat_preference"]


def test_an_unreachable_store_gives_texts_not_exceptions():
    store = HttpMemoryStore(f"http://127.0.0.1:{free_port()}", "mat_x", retries=0)
    tools = MemoryTools(store, "t-down")
    saved = run(tools.call, "save_memory", {"key": "seat", "value": "Prefers aisle seats"})
    recalled = run(tools.call, "recall_memories", {"topic": "seat"})
    assert saved.is_error and "unavailable" in saved.text
    assert recalled.is_error and "unavailable" in recalled.text
    assert run(tools.profile) == "Memory is unavailable right now; carry on without it."
