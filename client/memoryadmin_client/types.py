"""The fact as the agent sees it: the upstream shape, fields and limits, and nothing more."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

KEY_MAX_LENGTH = 64
SUBJECT_ID_MAX_LENGTH = 128
VALUE_MAX_LENGTH = 200
SESSION_ID_MAX_LENGTH = 80
TOPIC_MAX_LENGTH = 100
# save_memory's optional quote of the traveller's words (the server keeps at most this much).
EVIDENCE_MAX_LENGTH = 200


class MemoryCategory(StrEnum):
    PREFERENCE = "preference"
    CONSTRAINT = "constraint"
    CONTEXT = "context"


class MemoryFact(BaseModel):
    """One durable fact about a traveller, e.g. seat_preference = Prefers aisle seats."""

    model_config = ConfigDict(frozen=True)

    # No length limits here, as upstream: a store validates what it is given (keys clamped to
    # KEY_MAX_LENGTH, values to VALUE_MAX_LENGTH with a "...[truncated]" marker, empty ones
    # refused with a ValueError) so ported code that builds long facts keeps working.
    key: str
    value: str
    category: MemoryCategory = MemoryCategory.PREFERENCE
    updated_at: datetime | None = None
    source_session_id: str | None = Field(default=None, max_length=SESSION_ID_MAX_LENGTH)
    # The stored fact's version, as the store read it (None for a fact built by the host, and
    # from stores that keep none). The tools name it back in the turn's use receipts, so the
    # receipt records the value the agent had, not whatever the fact says later.
    version: int | None = None


class MemoryStore(Protocol):
    """The upstream async store protocol; every store here (Django, HTTP) implements it."""

    async def get_facts(self, subject_id: str) -> list[MemoryFact]: ...

    async def upsert_facts(self, subject_id: str, facts: list[MemoryFact]) -> None: ...

    async def search_facts(self, subject_id: str, query: str) -> list[MemoryFact]: ...

    async def delete_fact(self, subject_id: str, key: str) -> bool: ...

    async def clear(self, subject_id: str) -> None: ...

    async def purge_generation(self, subject_id: str) -> int: ...
