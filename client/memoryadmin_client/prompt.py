"""What an agent host puts into the system prompt: the saved_memory block of one traveller.

The block's format lives in blocks.py (tools.py renders recall results with it too); it is
re-exported here because extraction and older callers import it from this module.
"""

from __future__ import annotations

from typing import Any

from .blocks import (
    MEMORY_BLOCK_CLOSE,
    MEMORY_BLOCK_NOTE,
    MEMORY_BLOCK_OPEN,
    NOTHING_SAVED,
    TRANSCRIPT_CLOSE,
    TRANSCRIPT_NOTE,
    TRANSCRIPT_OPEN,
    FactLike,
    fact_record,
    quote_data,
    render_memory_block,
    render_transcript_block,
)
from .tools import MemoryTools

__all__ = [
    "MEMORY_BLOCK_CLOSE",
    "MEMORY_BLOCK_NOTE",
    "MEMORY_BLOCK_OPEN",
    "NOTHING_SAVED",
    "TRANSCRIPT_CLOSE",
    "TRANSCRIPT_NOTE",
    "TRANSCRIPT_OPEN",
    "FactLike",
    "fact_record",
    "quote_data",
    "render_memory_block",
    "render_transcript_block",
    "saved_memory_prompt",
]


async def saved_memory_prompt(
    store: Any, subject_id: str, *, session_id: str | None = None, turn_id: str | None = None
) -> str:
    """Tier one (or, for a store without it, every visible fact) rendered for the system
    prompt: the helper an agent host calls before each turn. Memory never fails a turn: if the
    store cannot be reached the block says nothing is available (MemoryTools owns those
    fallbacks). With `turn_id` (and the conversation's `session_id`), the injected keys are
    noted as use receipts and sent after the turn (usage.py)."""
    return await MemoryTools(store, subject_id, session_id, turn_id=turn_id).profile()
