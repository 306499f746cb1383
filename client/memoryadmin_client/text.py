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
# text for everything that was said. The marker, its leading space included, counts towards the
# 200 characters: upstream keeps 185 characters, a space and "...[truncated]".
TRUNCATION_MARKER = " ...[truncated]"

# Role markers in a value (<system>, </assistant>, <user ...>) could make a saved note read as a
# turn of the conversation once it is back in a prompt; upstream's validate_fact replaces each
# with FENCE_REPLACEMENT, and so does clean_value. Full-width brackets count too.
FENCE_REPLACEMENT = "[removed]"
_ROLE_MARKER = re.compile(
    r"[<\uff1c]\s*/?\s*(?:system|assistant|user|human|developer|tool|function)\b[^<>\uff1c\uff1e]*"
    r"[>\uff1e]",
    re.IGNORECASE,
)

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


def fold(text: str) -> str:
    """The NFKC form, used to compare and filter, never stored: full-width digits and
    punctuation (what Chinese and Japanese keyboards often type), ligatures and other
    compatibility forms become their plain equivalents, so a rule or a duplicate check that
    matches one form matches them all (upstream folds before it checks, too)."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def remove_role_markers(text: str) -> str:
    """Each role marker replaced by FENCE_REPLACEMENT (upstream's validate_fact does the same)."""
    if "<" not in text and "\uff1c" not in text:
        return text
    return _ROLE_MARKER.sub(FENCE_REPLACEMENT, text)


def clamp_value(text: str, limit: int = VALUE_MAX_LENGTH) -> str:
    """`text` if it fits, else cut so that it ends with TRUNCATION_MARKER within `limit` (185
    characters, a space and "...[truncated]" at 200, as upstream; trailing spaces of the kept
    part are dropped, so the result stays as clean_text leaves it)."""
    if len(text) <= limit:
        return text
    return text[: limit - len(TRUNCATION_MARKER)].rstrip() + TRUNCATION_MARKER


def clean_value(raw: str) -> str:
    """The value as stored: cleaned, role markers removed, and clamped to 200 characters with
    the upstream marker."""
    return clamp_value(remove_role_markers(clean_text(raw)))


def clamp_query(raw: str) -> str:
    """A search query or recall topic: cleaned and cut to 100 characters, the same limit for
    every store and the recall tool (a search should narrow, never fail, on a long topic)."""
    return clean_text(raw)[:TOPIC_MAX_LENGTH].strip()


def has_meaning(value: str) -> bool:
    """At least one letter or digit: "!!!" or "???" says nothing that could be remembered."""
    return any(char.isalnum() for char in value)
