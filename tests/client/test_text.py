"""The client's key/value clean-up must match the server's, or "Saved: <key>." would lie."""

from __future__ import annotations

import pytest

from memoryadmin.client.text import clean_text, clean_value, normalize_key
from memoryadmin.facts import validation

SAMPLES = [
    "seat_preference",
    "  Seat Preference ",
    "Seat-Preference!!",
    "MEAL   preference",
    "__meal__",
    "caf\u00e9 choice",
    "cafe\u0301 choice",  # decomposed accent, NFC makes it the same key
    "zero\u200bwidth key",
    "tab\tand\nnewline",
    "bidi\u202ekey",
    "\u5ea7\u4f4d \u504f\u597d",  # CJK words are word characters
    "k" * 80,
    "a" * 63 + " b",
    "!!!",
    "",
]


@pytest.mark.parametrize("raw", SAMPLES)
def test_normalize_key_matches_the_server(raw):
    assert normalize_key(raw) == validation.normalize_key(raw)


@pytest.mark.parametrize(
    "raw",
    ["Prefers aisle seats", "Vege\u200btarian\x07 meals", "  spaced \n\t out  ", "x" * 300, ""],
)
def test_value_cleaning_matches_the_server(raw):
    assert clean_text(raw) == validation.sanitize_text(raw)
    expected = validation.sanitize_text(raw)[:200].strip()
    assert clean_value(raw) == expected


def test_examples_read_as_expected():
    assert normalize_key("  Seat Preference ") == "seat_preference"
    assert len(normalize_key("k" * 80)) == 64
    assert clean_value("Vege\u200btarian\x07 meals") == "Vegetarian meals"
