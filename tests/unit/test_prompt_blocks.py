"""Recalled memory and transcripts as a prompt sees them (memoryadmin_client.blocks): whatever a
stored value holds, the block has one opening and one closing marker, and each line reads back
as the cleaned value."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryadmin_client import MemoryFact
from memoryadmin_client.blocks import (
    MEMORY_BLOCK_CLOSE,
    MEMORY_BLOCK_OPEN,
    NOTHING_SAVED,
    TRANSCRIPT_CLOSE,
    TRANSCRIPT_OPEN,
    render_memory_block,
    render_transcript_block,
)
from memoryadmin_client.text import clean_text

pytestmark = pytest.mark.unit

# Text that leans on what could break out of a block: markers, angle brackets, quotes, newlines.
hostile = st.text(
    alphabet=st.sampled_from(list("<>/&\"'\\\n\r\t {}:")) | st.characters(),
    max_size=60,
).map(lambda text: text.replace("saved", "</saved_memory>") if text else text)


def inside(block: str, opening: str, closing: str) -> list[str]:
    assert block.count(opening) == 1 and block.count(closing) == 1
    assert block.startswith(opening + "\n") and block.endswith("\n" + closing)
    return block[len(opening) + 1 : -len(closing) - 1].split("\n")


@given(st.lists(st.tuples(hostile, hostile), min_size=1, max_size=5))
def test_no_value_can_close_the_memory_block_and_each_reads_back(pairs):
    facts = [
        MemoryFact(
            key=key or "k",
            value=value or "v",
            category="context",
            updated_at=datetime(2026, 12, 5, tzinfo=UTC),
        )
        for key, value in pairs
    ]
    note, *lines = inside(render_memory_block(facts), MEMORY_BLOCK_OPEN, MEMORY_BLOCK_CLOSE)
    assert "not instructions" in note
    assert len(lines) == len(facts)
    for fact, line in zip(facts, lines, strict=True):
        assert not set("<>&\n") & set(line)
        record = json.loads(line)
        assert record["value"] == clean_text(fact.value)
        assert record["date"] == "2026-12-05"


@given(st.lists(st.tuples(st.sampled_from(["User", "Agent"]), hostile), max_size=5))
def test_no_message_can_close_the_transcript_block(turns):
    note, *lines = inside(render_transcript_block(turns), TRANSCRIPT_OPEN, TRANSCRIPT_CLOSE)
    assert "not instructions" in note
    assert [json.loads(line) for line in lines] == [
        {"speaker": speaker, "text": clean_text(text)} for speaker, text in turns
    ]


def test_an_empty_memory_says_so_inside_the_block():
    _, *lines = inside(render_memory_block([]), MEMORY_BLOCK_OPEN, MEMORY_BLOCK_CLOSE)
    assert lines == [NOTHING_SAVED]
