"""Old path of `memoryadmin_client.tools` (the memory tools):
the same objects, re-exported."""

from memoryadmin_client.tools import (
    BLOCKED_FALLBACK,
    CATEGORIES,
    DISABLED_TEXT,
    MEMORY_DISABLED_CODE,
    RECALL_MEMORIES_TOOL,
    SAVE_MEMORY_TOOL,
    TOOL_NAMES,
    UNAVAILABLE_TEXT,
    MemoryTools,
    ToolResult,
    format_facts,
)

__all__ = [
    "BLOCKED_FALLBACK",
    "CATEGORIES",
    "DISABLED_TEXT",
    "MEMORY_DISABLED_CODE",
    "RECALL_MEMORIES_TOOL",
    "SAVE_MEMORY_TOOL",
    "TOOL_NAMES",
    "UNAVAILABLE_TEXT",
    "MemoryTools",
    "ToolResult",
    "format_facts",
]
