"""Is a proposed fact something we already know? The upstream rules, as pure functions.

Under a held key: the same normalized value is a duplicate, a different one an update. Under a
new key: a value containing, or contained in, a held value, or sharing at least 60% of its word
tokens (Jaccard) with one, restates what is held and is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Prepared:
    """A value normalized and tokenized once, to be compared with many others: a batch
    compares each proposal with every held value, and normalizing both sides on every
    comparison was most of the time the checks of a turn took."""

    normalized: str
    tokens: frozenset[str]


def prepare(value: str) -> Prepared:
    normalized = normalize_value(value)
    return Prepared(normalized, tokens(normalized))


def restates_prepared(value: Prepared, other: Prepared) -> bool:
    """`restates` on prepared values."""
    left, right = value.normalized, other.normalized
    if not left or not right:
        return False
    if left in right or right in left:
        return True
    return jaccard(value.tokens, other.tokens) >= JACCARD_THRESHOLD


def restates(value: str, other: str) -> bool:
    """True when one value says (nearly) the same as the other."""
    return restates_prepared(prepare(value), prepare(other))


def judge_prepared(
    key: str, value: Prepared, held: dict[str, str], held_values: Iterable[Prepared]
) -> Verdict:
    """`judge` with the proposal and the values to compare with already prepared."""
    if key in held:
        if normalize_value(held[key]) == value.normalized:
            return Verdict.DUPLICATE
        return Verdict.UPDATE
    if any(restates_prepared(value, other) for other in held_values):
        return Verdict.DUPLICATE
    return Verdict.NEW


def judge(key: str, value: str, held: dict[str, str], held_values: Iterable[str]) -> Verdict:
    """Classify one cleaned proposal against what is held (`held` maps key -> value;
    `held_values` are the values a new key is compared with)."""
    return judge_prepared(key, prepare(value), held, (prepare(other) for other in held_values))
