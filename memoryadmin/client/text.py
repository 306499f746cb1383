"""Old path of `memoryadmin_client.text` (the text cleaning shared by the client and the server):
the same objects, re-exported."""

from memoryadmin_client.text import (
    TRUNCATION_MARKER,
    clamp_query,
    clamp_value,
    clean_text,
    clean_value,
    has_hidden_characters,
    has_meaning,
    normalize_key,
)

__all__ = [
    "TRUNCATION_MARKER",
    "clamp_query",
    "clamp_value",
    "clean_text",
    "clean_value",
    "has_hidden_characters",
    "has_meaning",
    "normalize_key",
]
