"""Old path of `memoryadmin_client.prompt` (the saved_memory prompt block):
the same objects, re-exported."""

from memoryadmin_client.prompt import (
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
    saved_memory_prompt,
)

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
