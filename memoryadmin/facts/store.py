"""DjangoMemoryStore: the upstream async MemoryStore protocol, in-process, over the services and
selectors. An agent host that runs inside this Django project uses it instead of the HTTP client.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async

from memoryadmin.client.types import MemoryCategory, MemoryFact

from . import selectors, services
from .actors import Actor
from .models import MemoryFact as FactRow
from .validation import normalize_key, session_tag


def to_wire(fact: FactRow) -> MemoryFact:
    """The upstream shape of a stored fact, as the agent sees it."""
    return MemoryFact(
        key=fact.key,
        value=fact.value,
        category=MemoryCategory(fact.category),
        updated_at=fact.updated_at,
        source_session_id=fact.source_session_id or None,
    )


class DjangoMemoryStore:
    """Writes are recorded with `actor` (the agent by default) and the session's 12-hex tag."""

    def __init__(self, *, actor: Actor | None = None, session_id: str | None = None) -> None:
        self.actor = actor or Actor.agent("in-process")
        self.session_tag = session_tag(session_id)

    async def get_facts(self, subject_id: str) -> list[MemoryFact]:
        rows = await sync_to_async(selectors.facts_for_agent)(subject_id)
        return [to_wire(row) for row in rows]

    async def upsert_facts(self, subject_id: str, facts: list[MemoryFact]) -> None:
        drafts = [services.FactDraft(f.key, f.value, f.category) for f in facts]
        await sync_to_async(services.fact_upsert)(
            subject_id=subject_id,
            facts=drafts,
            actor=self.actor,
            reason="saved by the agent",
            session_tag=self.session_tag,
        )

    async def search_facts(self, subject_id: str, query: str) -> list[MemoryFact]:
        rows = await sync_to_async(selectors.facts_search)(subject_id, query)
        return [to_wire(row) for row in rows]

    async def delete_fact(self, subject_id: str, key: str) -> bool:
        return await sync_to_async(services.fact_delete)(
            subject_id=subject_id,
            key=normalize_key(key),
            actor=self.actor,
            reason="deleted by the agent",
        )

    async def clear(self, subject_id: str) -> None:
        await sync_to_async(services.subject_clear)(
            subject_id=subject_id, actor=self.actor, reason="cleared by the agent"
        )

    async def purge_generation(self, subject_id: str) -> int:
        return await sync_to_async(selectors.purge_generation)(subject_id)

    async def tier_one(self, subject_id: str) -> list[MemoryFact]:
        rows = await sync_to_async(selectors.tier_one)(subject_id)
        return [to_wire(row) for row in rows]
