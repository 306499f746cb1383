"""Is a proposed fact something we already know? The upstream rules, as pure functions.

Under a held key: the same normalized value is a duplicate, a different one an update. Under a
new key: a value containing, or contained in, a held value, or sharing at least 60% of its word
tokens (Jaccard) with one, restates what is held and is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum

from memoryadmin.facts.validation import normalize_value

JACCARD_THRESHOLD = 0.6
# Words; a hyphen inside a word keeps it one token ("non-stop", "carry-on"), as upstream
# tokenizes. Other punctuation separates words and never makes two values differ.
_TOKEN = re.compile(r"\w+(?:-\w+)*")


class Verdict(StrEnum):
    NEW = "new"
    UPDATE = "update"
    DUPLICATE = "duplicate"


def tokens(value: str) -> frozenset[str]:
    """Word tokens of the normalized value; punctuation does not make two values differ."""
    return frozenset(_TOKEN.findall(normalize_value(value)))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Two values without any word share nothing (validate_fact refuses such values anyway)."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def restates(value: str, other: str) -> bool:
    """True when one value says (nearly) the same as the other."""
    left, right = normalize_value(value), normalize_value(other)
    if not left or not right:
        return False
    if left in right or right in left:
        return True
    return jaccard(tokens(left), tokens(right)) >= JACCARD_THRESHOLD


def judge(key: str, value: str, held: dict[str, str], held_values: Iterable[str]) -> Verdict:
    """Classify one cleaned proposal against what is held (`held` maps key -> value;
    `held_values` are the values a new key is compared with)."""
    if key in held:
        if normalize_value(held[key]) == normalize_value(value):
            return Verdict.DUPLICATE
        return Verdict.UPDATE
    if any(restates(value, other) for other in held_values):
        return Verdict.DUPLICATE
    return Verdict.NEW
