"""DjangoMemoryStore: the upstream async MemoryStore protocol, in-process, over the services and
selectors. An agent host that runs inside this Django project uses it instead of the HTTP client.

The agent's reads run on every turn, so on PostgreSQL they do not hop to a thread: they run the
selectors' own SQL (`facts/sql.py`, so the rows are the same by construction) on native async
psycopg connections opened beside Django's, a psycopg_pool pool per event loop (`db/pool.py`),
all closed when that loop ends: no connection outlives its loop and no loop's shutdown waits on
them. An agent host may also hold the store as `async with DjangoMemoryStore() as store:` (or
call `await store.aclose()`), which closes the current loop's connections at once. Upserts run
`services.fact_upsert_async` on the same pool (the same plan, statements and audit events as
`fact_upsert`), deletes `services.fact_delete_async` (the same one erasing statement as
`fact_delete`, with the erasers' SQL in it); clears go through their service in Django's thread.

A test inside a transaction on Django's connection hides its data from the native path's own
connections, so the test suite turns that path off (`MEMORY_STORE_NATIVE_ASYNC`) for such tests
only; the store's own tests run on committed data, on the default native path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone

from memoryadmin import db
from memoryadmin.db import subject_fetch
from memoryadmin_client.text import clamp_query
from memoryadmin_client.types import MemoryCategory, MemoryFact

from . import erasure, selectors, services
from .actors import Actor
from .sql import SQL_FACTS, SQL_PURGE_GENERATION, SQL_SEARCH, SQL_TIER_ONE
from .validation import clean_subject_id, normalize_key, session_tag

_CATEGORIES = {category.value: category for category in MemoryCategory}


def to_wire(fact: Any) -> MemoryFact:
    """The upstream shape of a stored fact, as the agent sees it (any object with the wire
    attributes: a selectors.AgentFact, a services.FactState or a model row)."""
    return MemoryFact.model_construct(
        key=fact.key,
        value=fact.value,
        category=_CATEGORIES[fact.category],
        updated_at=fact.updated_at,
        source_session_id=fact.source_session_id or None,
        version=fact.version,
    )


_WIRE_FIELDS = ("key", "value", "category", "updated_at", "source_session_id", "version")


def _wire_rows(rows: Iterable[Sequence[Any]]) -> list[MemoryFact]:
    """Rows in AgentFact column order straight to the wire shape. The rows come from our own
    table, already valid, so they skip validation: `db.model_builder` (pydantic's
    `model_construct`, or with FASTPATH_PYDANTIC_CONSTRUCT its slots filled directly)."""
    build = db.model_builder(MemoryFact, _WIRE_FIELDS)
    categories = _CATEGORIES
    return [
        build(
            {
                "key": row[0],
                "value": row[1],
                "category": categories[row[2]],
                "updated_at": row[3],
                "source_session_id": row[4] or None,
                "version": row[5],
            }
        )
        for row in rows
    ]


async def _config() -> selectors.MemoryConfig:
    """The cached settings; only a stale cache (once per TTL) costs a hop to Django's thread."""
    return selectors.memory_config_if_fresh() or await sync_to_async(selectors.memory_config)()


# --- the store -----------------------------------------------------------------------------------


def native_enabled() -> bool:
    return settings.MEMORY_STORE_NATIVE_ASYNC


def _check_subject(subject_id: str) -> None:
    """Reads refuse an id that no write would accept, as HttpMemoryStore does (a ValueError),
    instead of answering "nothing" for a traveller who cannot exist."""
    clean_subject_id(subject_id)


class DjangoMemoryStore:
    """Writes are recorded with `actor` (the agent by default) and the session's 12-hex tag.

    Upstream's rules hold: values over 200 characters are clamped with a "...[truncated]"
    marker, a refused fact raises a ValueError (FactInvalid, FactBlocked), search queries are
    cut to 100 characters like HttpMemoryStore's. With memory switched off reads are empty and
    saves raise FactMemoryDisabled; deleting and clearing still work (forgetting is always
    allowed)."""

    def __init__(
        self,
        *,
        actor: Actor | None = None,
        session_id: str | None = None,
        native: bool | None = None,
    ) -> None:
        self.actor = actor or Actor.agent("in-process")
        self.session_tag = session_tag(session_id)
        self._native = native

    @property
    def native(self) -> bool:
        return native_enabled() if self._native is None else self._native

    async def __aenter__(self) -> DjangoMemoryStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the current event loop's connections (the next call opens them again). Needed
        only where a loop ends without cancelling its tasks; see `db.store_connections_close`."""
        await db.store_connections_close()

    async def get_facts(self, subject_id: str) -> list[MemoryFact]:
        _check_subject(subject_id)
        if not self.native:
            return [
                to_wire(row) for row in await sync_to_async(selectors.facts_for_agent)(subject_id)
            ]
        if not (await _config()).settings.memory_enabled:
            return []
        return _wire_rows(
            await subject_fetch(SQL_FACTS, {"subject": subject_id, "now": timezone.now()})
        )

    async def search_facts(self, subject_id: str, query: str) -> list[MemoryFact]:
        _check_subject(subject_id)
        query = clamp_query(query)  # the same 100 characters as HttpMemoryStore
        terms = selectors.search_terms(query)
        if not terms:
            return await self.get_facts(subject_id)
        if not self.native:
            rows = await sync_to_async(selectors.facts_search)(subject_id, query)
            return [to_wire(row) for row in rows]
        if not (await _config()).settings.memory_enabled:
            return []
        params = {
            "subject": subject_id,
            "now": timezone.now(),
            "terms": selectors.search_terms_param(terms),
        }
        return _wire_rows(await subject_fetch(SQL_SEARCH, params))

    async def tier_one(self, subject_id: str) -> list[MemoryFact]:
        _check_subject(subject_id)
        if not self.native:
            return [to_wire(row) for row in await sync_to_async(selectors.tier_one)(subject_id)]
        memory = (await _config()).settings
        if not memory.memory_enabled:
            return []
        params = {"subject": subject_id, "now": timezone.now(), "cap": memory.tier_one_cap}
        return _wire_rows(await subject_fetch(SQL_TIER_ONE, params))

    async def purge_generation(self, subject_id: str) -> int:
        _check_subject(subject_id)
        if not self.native:
            return await sync_to_async(selectors.purge_generation)(subject_id)
        [(generation,)] = await subject_fetch(SQL_PURGE_GENERATION, {"subject": subject_id})
        return generation

    async def upsert_facts(
        self,
        subject_id: str,
        facts: list[MemoryFact],
        *,
        evidence: Mapping[str, str] | None = None,
    ) -> None:
        """`evidence`: save_memory's quotes by key (see HttpMemoryStore.upsert_facts)."""
        quotes = evidence or {}
        drafts = [
            services.FactDraft(f.key, f.value, f.category, evidence=quotes.get(f.key, ""))
            for f in facts
        ]
        if not self.native:
            await sync_to_async(services.fact_upsert)(
                subject_id=subject_id,
                facts=drafts,
                actor=self.actor,
                reason="saved by the agent",
                session_tag=self.session_tag,
            )
            return
        config = await _config()
        async with db.store_connection() as conn:
            await services.fact_upsert_async(
                conn=conn,
                subject_id=subject_id,
                facts=drafts,
                actor=self.actor,
                config=config,
                reason="saved by the agent",
                session_tag=self.session_tag,
            )
            await db.written_async(conn, subject_id)

    async def delete_fact(self, subject_id: str, key: str) -> bool:
        if not normalize_key(key):
            return False  # no fact has an empty key (upstream and HttpMemoryStore answer False)
        if not (self.native and erasure.native_ready()):
            return await sync_to_async(services.fact_delete)(
                subject_id=subject_id,
                key=normalize_key(key),
                actor=self.actor,
                reason="deleted by the agent",
            )
        async with db.store_connection() as conn:
            deleted = await services.fact_delete_async(
                conn=conn,
                subject_id=subject_id,
                key=key,
                actor=self.actor,
                reason="deleted by the agent",
            )
            await db.written_async(conn, subject_id)
            return deleted

    async def clear(self, subject_id: str) -> None:
        await sync_to_async(services.subject_clear)(
            subject_id=subject_id, actor=self.actor, reason="cleared by the agent"
        )

    async def memory_enabled(self) -> bool:
        """The airline's switch; the tools ask it to tell "nothing saved" from "memory off"."""
        return (await _config()).settings.memory_enabled

    async def record_uses(self, subject_id: str, turns: Sequence[dict[str, Any]]) -> None:
        """Use receipts of one or many turns (memoryadmin_client.usage sends them after the
        turn): one INSERT, through the recorder the usage app sets from its AppConfig.ready()
        (`facts` imports nothing above it). Without that app, receipts are dropped."""
        if _USE_RECORDER is not None and turns:
            await sync_to_async(_USE_RECORDER)(subject_id, list(turns))


UseRecorderFn = Callable[[str, list[dict[str, Any]]], Any]
_USE_RECORDER: UseRecorderFn | None = None


def use_recorder_set(recorder: UseRecorderFn | None) -> None:
    """Called by the usage app: how DjangoMemoryStore.record_uses stores receipts."""
    global _USE_RECORDER
    _USE_RECORDER = recorder
