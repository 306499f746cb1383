"""Old path of `memoryadmin_client.types` (the wire types and their limits):
the same objects, re-exported."""

from memoryadmin_client.types import (
    KEY_MAX_LENGTH,
    SESSION_ID_MAX_LENGTH,
    TOPIC_MAX_LENGTH,
    VALUE_MAX_LENGTH,
    MemoryCategory,
    MemoryFact,
    MemoryStore,
)

__all__ = [
    "KEY_MAX_LENGTH",
    "SESSION_ID_MAX_LENGTH",
    "TOPIC_MAX_LENGTH",
    "VALUE_MAX_LENGTH",
    "MemoryCategory",
    "MemoryFact",
    "MemoryStore",
]
