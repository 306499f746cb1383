"""Key and value clean-up on the agent side, matching what the server stores.

The tools tell the model the key *as stored* ("Saved: seat_preference."), so the client has to
normalize exactly like the server. These functions are the one copy of the rules: the server's
validate_fact (memoryadmin.facts.validation) uses them too, and this module needs no Django.
"""

from __future__ import annotations

import re
import unicodedata

from .types import KEY_MAX_LENGTH, TOPIC_MAX_LENGTH, VALUE_MAX_LENGTH

# Upstream marks a value it had to cut, so neither the model nor a reviewer mistakes the stored
# text for everything that was said. The marker counts towards the 200 characters.
TRUNCATION_MARKER = "...[truncated]"

# Control, format (zero-width, bidi), surrogate, private-use and unassigned characters hide text
# from reviewers, so they are dropped.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})
_WHITESPACE_RUN = re.compile(r"\s+")
_NON_WORD_RUN = re.compile(r"[^\w]+")
_UNDERSCORE_RUN = re.compile(r"_+")


def clean_text(text: str) -> str:
    """NFC, invisible characters removed, every whitespace run turned into one space, trimmed."""
    if text.isprintable() and unicodedata.is_normalized("NFC", text):
        # The common case, without the per-character loop: isprintable() is False for every
        # invisible category above and for every whitespace but the plain space.
        return _WHITESPACE_RUN.sub(" ", text).strip()
    kept: list[str] = []
    for char in unicodedata.normalize("NFC", text):
        if char.isspace():
            kept.append(" ")
        elif unicodedata.category(char) not in _INVISIBLE_CATEGORIES:
            kept.append(char)
    return _WHITESPACE_RUN.sub(" ", "".join(kept)).strip()


def has_hidden_characters(text: str) -> bool:
    """True when the text holds characters clean_text would drop as invisible."""
    return any(unicodedata.category(char) in _INVISIBLE_CATEGORIES for char in text)


def normalize_key(raw: str) -> str:
    """A snake_case topic: lower-case, spaces and punctuation to `_`, at most 64 characters."""
    key = clean_text(raw).lower().replace(" ", "_")
    key = _UNDERSCORE_RUN.sub("_", _NON_WORD_RUN.sub("_", key)).strip("_")
    return key[:KEY_MAX_LENGTH].rstrip("_")


def clamp_value(text: str, limit: int = VALUE_MAX_LENGTH) -> str:
    """`text` if it fits, else cut so that it ends with TRUNCATION_MARKER within `limit`."""
    if len(text) <= limit:
        return text
    return text[: limit - len(TRUNCATION_MARKER)].rstrip() + TRUNCATION_MARKER


def clean_value(raw: str) -> str:
    """The value as stored: cleaned, and clamped to 200 characters with the upstream marker."""
    return clamp_value(clean_text(raw))


def clamp_query(raw: str) -> str:
    """A search query or recall topic: cleaned and cut to 100 characters, the same limit for
    every store and the recall tool (a search should narrow, never fail, on a long topic)."""
    return clean_text(raw)[:TOPIC_MAX_LENGTH].strip()


def has_meaning(value: str) -> bool:
    """At least one letter or digit: "!!!" or "???" says nothing that could be remembered."""
    return any(char.isalnum() for char in value)
