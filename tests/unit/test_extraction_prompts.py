"""The extraction prompt says what the issue asks it to say, and the tool matches the schema."""

from __future__ import annotations

import pytest

from memoryadmin.extraction.prompts import (
    AIRLINE_PROMPT,
    EXTRACTION_TEMPLATE,
    RECORD_FACT_TOOL,
    airline_prompt,
)

pytestmark = pytest.mark.unit


def test_airline_prompt_is_filled_from_the_generic_template() -> None:
    assert "{" not in AIRLINE_PROMPT
    assert airline_prompt(3) == AIRLINE_PROMPT
    for generic in (
        "said it themself",
        "still be true",
        "next time",
        "record_fact",
        "reuse its key",
        "snake_case English",
        "own language or in English",
    ):
        assert generic in EXTRACTION_TEMPLATE or generic in AIRLINE_PROMPT, generic


def test_airline_prompt_names_what_to_keep_and_what_not() -> None:
    text = AIRLINE_PROMPT.lower()
    for keep in (
        "seat",
        "cabin",
        "meal preferences that are not medical",
        "airports",
        "connections",
        "overnight flights",
        "travel with",
        "baggage",
        "routes",
    ):
        assert keep in text, keep
    for skip in (
        "this trip's errand",
        "fares",
        "availability",
        "schedules",
        "policies",
        "guesses",
        "health",
        "financial",
        "identity",
        "in so many words",
        "loyalty",
        "passport",
        "booking number",
    ):
        assert skip in text, skip


def test_cap_is_stated() -> None:
    assert "at most 3 times" in AIRLINE_PROMPT
    assert "at most 1 times" in airline_prompt(1)


def test_record_fact_tool_schema() -> None:
    assert RECORD_FACT_TOOL["name"] == "record_fact"
    schema = RECORD_FACT_TOOL["input_schema"]
    assert schema["type"] == "object"
    assert schema["properties"]["key"] == {
        "type": "string",
        "maxLength": 64,
        "description": schema["properties"]["key"]["description"],
    }
    assert schema["properties"]["value"]["maxLength"] == 200
    assert schema["properties"]["category"]["enum"] == ["preference", "constraint", "context"]
    assert set(schema["required"]) == {"key", "value", "category"}


def test_the_prompt_and_the_tool_ask_for_the_travellers_own_words() -> None:
    """Issue 21: a verbatim quote from the traveller's messages, never the agent's, never a
    paraphrase, at most 200 characters; optional (not required)."""
    assert "copied exactly" in AIRLINE_PROMPT
    assert "Never quote the agent, never paraphrase" in AIRLINE_PROMPT
    assert "at most 200 characters" in AIRLINE_PROMPT
    evidence = RECORD_FACT_TOOL["input_schema"]["properties"]["evidence"]
    assert evidence["type"] == "string" and evidence["maxLength"] == 200
    assert "verbatim" in evidence["description"]
    assert "evidence" not in RECORD_FACT_TOOL["input_schema"]["required"]
