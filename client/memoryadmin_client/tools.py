"""The agent's two memory tools: their Anthropic definitions and an executor over any MemoryStore.

A host passes `MemoryTools(...).tools` to the Messages API and hands every `tool_use` block for
these names to `run` (or `call`, which also says whether the result is an error). Memory must
never break a turn, so nothing here raises for a bad call or a failing store: the model gets a
short text it can act on instead.
"""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .blocks import render_memory_block
from .errors import MemoryApiError
from .text import clamp_query, clean_text, clean_value, normalize_key
from .types import (
    EVIDENCE_MAX_LENGTH,
    KEY_MAX_LENGTH,
    TOPIC_MAX_LENGTH,
    VALUE_MAX_LENGTH,
    MemoryCategory,
    MemoryFact,
    MemoryStore,
)
from .usage import recorder_for

logger = logging.getLogger(__name__)

CATEGORIES: Final = tuple(category.value for category in MemoryCategory)

EVIDENCE_DESCRIPTION: Final = (
    "Optional: the traveller's own words you learned this from, copied exactly from their "
    "message (at most 200 characters), e.g. 'I always sit on the aisle'. Never your own "
    "words or a paraphrase; leave it out if there is no such sentence."
)

SAVE_MEMORY_TOOL: Final[dict[str, Any]] = {
    "name": "save_memory",
    "description": (
        "Remember one durable fact about this traveller for future conversations, e.g. "
        "key=seat_preference, value='Prefers aisle seats'. Save it in the same turn the "
        "traveller tells you. One fact per key; word the value so it makes sense on its own. "
        "Saving under a key that already exists replaces the old value, so reuse the key when "
        "something changes. Do not save this trip's details, fares or your own guesses, and "
        "never health, payment or identity details (passport, loyalty or booking numbers, "
        "cards, e-mail, phone) unless the traveller explicitly asked you to remember them."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "key": {
                "type": "string",
                "maxLength": KEY_MAX_LENGTH,
                "description": "Short snake_case topic, e.g. seat_preference, meal_preference.",
            },
            "value": {
                "type": "string",
                "maxLength": VALUE_MAX_LENGTH,
                "description": "The fact in a few plain words, e.g. 'Prefers aisle seats'.",
            },
            "category": {
                "type": "string",
                "enum": list(CATEGORIES),
                "description": (
                    "preference (a liking), constraint (a hard rule to respect), or context "
                    "(background such as who they travel with). Defaults to preference."
                ),
            },
            "evidence": {
                "type": "string",
                "maxLength": EVIDENCE_MAX_LENGTH,
                "description": EVIDENCE_DESCRIPTION,
            },
        },
        "required": ["key", "value"],
        "additionalProperties": False,
    },
}

RECALL_MEMORIES_TOOL: Final[dict[str, Any]] = {
    "name": "recall_memories",
    "description": (
        "Look up what is saved about this traveller on one topic, e.g. 'seat', 'meal', "
        "'companions'. Use it only when an older fact could change what you do now and it is "
        "not already in the saved_memory profile you were given."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "topic": {
                "type": "string",
                "maxLength": TOPIC_MAX_LENGTH,
                "description": "One or a few words; any word matching a saved fact finds it.",
            },
        },
        "required": ["topic"],
        "additionalProperties": False,
    },
}

TOOL_NAMES: Final = frozenset({SAVE_MEMORY_TOOL["name"], RECALL_MEMORIES_TOOL["name"]})

UNAVAILABLE_TEXT: Final = "Memory is unavailable right now; carry on without it."
DISABLED_TEXT: Final = "Memory is not enabled; nothing is saved or recalled."
MEMORY_DISABLED_CODE: Final = "memory_disabled"
BLOCKED_FALLBACK: Final = (
    "Not saved: it looks like an identifier or contact detail (a card, account, ID or phone "
    "number, or an e-mail address), which is not kept in memory."
)


@dataclass(frozen=True)
class ToolResult:
    """What a tool call produced; `is_error` maps to the Messages API tool_result flag."""

    text: str
    is_error: bool = False


def format_facts(facts: Sequence[MemoryFact]) -> str:
    """The facts as the model reads them: one delimited block of quoted data (see blocks.py),
    so that a stored value can never pass for an instruction."""
    return render_memory_block(facts)


def _accepts(method: Any, name: str) -> bool:
    """Whether a store's upsert_facts takes a keyword (HttpMemoryStore takes session_id and
    evidence, DjangoMemoryStore evidence; an upstream store neither)."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        parameter.name == name or parameter.kind is inspect.Parameter.VAR_KEYWORD
        for parameter in parameters
    )


def _accepts_session_id(method: Any) -> bool:
    return _accepts(method, "session_id")


def _quote(raw: object) -> str | None:
    """save_memory's evidence as sent: cleaned text within the limit, else none (a bad quote
    is dropped, never the fact)."""
    if not isinstance(raw, str):
        return None
    text = clean_text(raw)
    return text if text and len(text) <= EVIDENCE_MAX_LENGTH else None


class MemoryTools:
    """save_memory and recall_memories for one traveller in one conversation."""

    def __init__(
        self,
        store: MemoryStore,
        subject_id: str,
        session_id: str | None = None,
        *,
        recall_limit: int = 20,
        turn_id: str | None = None,
    ) -> None:
        self.store = store
        self.subject_id = subject_id
        self.session_id = session_id
        self.recall_limit = recall_limit
        # With a turn id, what the agent is given and recalls is noted as a use receipt
        # (usage.py), sent after the turn; set it anew for each turn.
        self.turn_id = turn_id
        self._write_keywords: tuple[bool, bool] | None = None  # see _keywords

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The two definitions, copied so a host may decorate them (e.g. cache_control)."""
        return [copy.deepcopy(SAVE_MEMORY_TOOL), copy.deepcopy(RECALL_MEMORIES_TOOL)]

    async def run(self, name: str, tool_input: Any) -> str:
        return (await self.call(name, tool_input)).text

    async def call(self, name: str, tool_input: Any) -> ToolResult:
        if name == "save_memory":
            return await self._save(tool_input)
        if name == "recall_memories":
            return await self._recall(tool_input)
        return ToolResult(
            f"Unknown tool {str(name)[:64]!r}; the memory tools are save_memory and "
            "recall_memories.",
            is_error=True,
        )

    async def profile(self) -> str:
        """The saved_memory block for the system prompt: tier one if the store offers it, else
        every visible fact."""
        tier_one = getattr(self.store, "tier_one", None)
        try:
            if tier_one is not None:
                facts = await tier_one(self.subject_id)
            else:
                facts = await self.store.get_facts(self.subject_id)
            if not facts and not await self._memory_enabled():
                return DISABLED_TEXT
        except Exception as exc:  # memory never fails a turn
            self._log_failure("saved_memory", exc)
            return UNAVAILABLE_TEXT
        self._note("injected", facts)
        return format_facts(facts)

    def _note(self, how: str, facts: Sequence[MemoryFact]) -> None:
        if self.turn_id and facts:
            recorder_for(self.store).note(
                self.subject_id,
                session_id=self.session_id or "",
                turn_id=self.turn_id,
                how=how,
                keys=[
                    fact.key if fact.version is None else {"key": fact.key, "version": fact.version}
                    for fact in facts
                ],
            )

    async def _memory_enabled(self) -> bool:
        """Asked only when a read came back empty (memory off serves nothing), and only of a
        store that can tell (both of ours can; a plain upstream store is always on)."""
        probe = getattr(self.store, "memory_enabled", None)
        return True if probe is None else bool(await probe())

    # --- the tools --------------------------------------------------------------------------

    async def _save(self, tool_input: Any) -> ToolResult:
        if not isinstance(tool_input, Mapping):
            return ToolResult("Not saved: give a key and a value.", is_error=True)
        raw_key, raw_value = tool_input.get("key"), tool_input.get("value")
        raw_category = tool_input.get("category")
        problems: list[str] = []
        key = normalize_key(raw_key) if isinstance(raw_key, str) else ""
        value = clean_value(raw_value) if isinstance(raw_value, str) else ""
        if not key:
            problems.append("the key must be a short snake_case topic such as seat_preference")
        if not value:
            problems.append("the value must be a few words of text")
        category = MemoryCategory.PREFERENCE
        if raw_category not in (None, ""):
            wanted = raw_category.strip().lower() if isinstance(raw_category, str) else ""
            if wanted in CATEGORIES:
                category = MemoryCategory(wanted)
            else:
                problems.append(f"the category must be one of {', '.join(CATEGORIES)}")
        if problems:
            return ToolResult(f"Not saved: {'; '.join(problems)}.", is_error=True)

        fact = MemoryFact(key=key, value=value, category=category)
        extra: dict[str, Any] = {}
        session_per_call, takes_evidence = self._keywords()
        if session_per_call:
            extra["session_id"] = self.session_id
        quote = _quote(tool_input.get("evidence"))
        if quote and takes_evidence:
            extra["evidence"] = {key: quote}
        try:
            await self.store.upsert_facts(self.subject_id, [fact], **extra)
        except Exception as exc:
            return self._save_failure(exc, secrets=(value, raw_value, quote))
        return ToolResult(f"Saved: {key}.")

    def _keywords(self) -> tuple[bool, bool]:
        """Whether the store's upsert_facts takes session_id (when there is one) and evidence:
        read once, at the first save (a profile read, the hot path, never needs it)."""
        if self._write_keywords is None:
            method = self.store.upsert_facts
            self._write_keywords = (
                self.session_id is not None and _accepts_session_id(method),
                _accepts(method, "evidence"),
            )
        return self._write_keywords

    async def _recall(self, tool_input: Any) -> ToolResult:
        raw_topic = tool_input.get("topic") if isinstance(tool_input, Mapping) else None
        if not isinstance(raw_topic, str):
            return ToolResult("Give a topic to recall, e.g. 'seat' or 'meal'.", is_error=True)
        topic = clamp_query(raw_topic)
        try:
            facts = await self.store.search_facts(self.subject_id, topic)
            if not facts and not await self._memory_enabled():
                return ToolResult(DISABLED_TEXT)
        except Exception as exc:
            self._log_failure("recall_memories", exc)
            return ToolResult(UNAVAILABLE_TEXT, is_error=True)
        if not facts:
            about = f"about {topic}" if topic else "about this traveller"
            return ToolResult(f"No saved memories {about}.")
        shown = facts[: self.recall_limit]
        self._note("recalled", shown)
        text = format_facts(shown)
        if len(facts) > len(shown):
            text += f"\n({len(facts) - len(shown)} more; ask about a narrower topic.)"
        return ToolResult(text)

    # --- failures ---------------------------------------------------------------------------

    def _save_failure(self, exc: Exception, *, secrets: Sequence[object]) -> ToolResult:
        """Refusals and validation errors are explained; anything else means memory is down.
        The text never contains the value, whatever the store's message says."""
        code = getattr(exc, "code", None)
        message = getattr(exc, "message", None)
        if code == MEMORY_DISABLED_CODE:
            return ToolResult(f"Not saved. {DISABLED_TEXT}", is_error=True)
        is_domain_error = isinstance(exc, MemoryApiError) or (
            isinstance(code, str) and isinstance(message, str)
        )
        if not is_domain_error or code not in ("blocked_by_filter", "invalid"):
            self._log_failure("save_memory", exc)
            return ToolResult(f"Not saved. {UNAVAILABLE_TEXT}", is_error=True)
        parts = [str(message)]
        for detail in (getattr(exc, "fields", None) or {}).values():
            if str(detail) not in parts:
                parts.append(str(detail))
        text = f"Not saved: {' '.join(parts)}"
        if code == "blocked_by_filter" and _mentions(text, secrets):
            text = BLOCKED_FALLBACK
        elif _mentions(text, secrets):
            text = "Not saved: the fact is not valid."
        return ToolResult(text, is_error=True)

    def _log_failure(self, tool: str, exc: Exception) -> None:
        if isinstance(exc, MemoryApiError):
            logger.warning("memory tool %s failed: %r %s", tool, exc, exc.message)
        else:
            logger.exception("memory tool %s failed unexpectedly", tool)


def _mentions(text: str, secrets: Sequence[object]) -> bool:
    lowered = text.lower()
    return any(
        isinstance(secret, str) and secret.strip() and secret.strip().lower() in lowered
        for secret in secrets
    )
