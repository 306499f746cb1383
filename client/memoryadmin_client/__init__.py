"""What an agent host imports (the memoryadmin-client distribution). Nothing here needs Django
or its settings: it talks to the memoryadmin server over HTTP only."""

from importlib import resources

from .errors import (
    AuthError,
    Blocked,
    Conflict,
    Invalid,
    MemoryApiError,
    MemoryDisabled,
    NotFound,
    Throttled,
    Unavailable,
)
from .http import HttpMemoryStore, PortalLink, VersionedFact
from .prompt import render_memory_block, saved_memory_prompt
from .tools import RECALL_MEMORIES_TOOL, SAVE_MEMORY_TOOL, MemoryTools, ToolResult, format_facts
from .types import MemoryCategory, MemoryFact, MemoryStore
from .usage import UseRecorder, flush_uses, recorder_for


def skill_text() -> str:
    """The airline memory skill (SKILL.md) shipped with the package, for a system prompt or a
    skills directory."""
    return resources.files(__name__).joinpath("SKILL.md").read_text(encoding="utf-8")


__all__ = [
    "RECALL_MEMORIES_TOOL",
    "SAVE_MEMORY_TOOL",
    "AuthError",
    "Blocked",
    "Conflict",
    "HttpMemoryStore",
    "Invalid",
    "MemoryApiError",
    "MemoryCategory",
    "MemoryDisabled",
    "MemoryFact",
    "MemoryStore",
    "MemoryTools",
    "NotFound",
    "PortalLink",
    "Throttled",
    "ToolResult",
    "Unavailable",
    "UseRecorder",
    "VersionedFact",
    "flush_uses",
    "format_facts",
    "recorder_for",
    "render_memory_block",
    "saved_memory_prompt",
    "skill_text",
]
