"""Old import path of the agent client, deprecated: everything here is the `memoryadmin_client`
package (the memoryadmin-client distribution in client/), re-exported, and importing it (or any
module under it) warns with a DeprecationWarning that names the new path. Nothing in the server
imports it (import-linter forbids it); it stays only for hosts that have not moved yet."""

import warnings

from memoryadmin_client import (
    RECALL_MEMORIES_TOOL,
    SAVE_MEMORY_TOOL,
    AuthError,
    Blocked,
    Conflict,
    HttpMemoryStore,
    Invalid,
    MemoryApiError,
    MemoryCategory,
    MemoryDisabled,
    MemoryFact,
    MemoryStore,
    MemoryTools,
    NotFound,
    PortalLink,
    Throttled,
    ToolResult,
    Unavailable,
    UseRecorder,
    VersionedFact,
    flush_uses,
    format_facts,
    recorder_for,
    render_memory_block,
    saved_memory_prompt,
    skill_text,
)

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

warnings.warn(
    "memoryadmin.client is deprecated: import memoryadmin_client instead "
    "(memoryadmin.client.X is memoryadmin_client.X; "
    "python -m memoryadmin_client.mcp runs the MCP server).",
    DeprecationWarning,
    stacklevel=2,  # the importer's line (the import system's own frames are skipped)
)
