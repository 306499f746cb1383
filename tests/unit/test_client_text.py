"""Key and value clean-up (shared by the client tools and the server's validate_fact)."""

from __future__ import annotations

import pytest

from memoryadmin.facts import validation
from memoryadmin_client.text import clamp_query, clean_text, clean_value, normalize_key

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("seat_preference", "seat_preference"),
        ("  Seat Preference ", "seat_preference"),
        ("Seat-Preference!!", "seat_preference"),
        ("MEAL   preference", "meal_preference"),
        ("__meal__", "meal"),
        ("caf\u00e9 choice", "caf\u00e9_choice"),
        ("cafe\u0301 choice", "caf\u00e9_choice"),  # decomposed accent: NFC makes it one key
        ("zero\u200bwidth key", "zerowidth_key"),
        ("tab\tand\nnewline", "tab_and_newline"),
        ("bidi\u202ekey", "bidikey"),
        ("\u5ea7\u4f4d \u504f\u597d", "\u5ea7\u4f4d_\u504f\u597d"),  # CJK words are word chars
        ("k" * 80, "k" * 64),
        ("a" * 63 + " b", "a" * 63),
        ("!!!", ""),
        ("", ""),
    ],
)
def test_normalize_key(raw, key):
    assert normalize_key(raw) == key


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("Prefers aisle seats", "Prefers aisle seats"),
        ("Vege\u200btarian\x07 meals", "Vegetarian meals"),
        ("  spaced \n\t out  ", "spaced out"),
        ("", ""),
    ],
)
def test_clean_value(raw, value):
    assert clean_value(raw) == value
    assert clean_text(raw)[:200] == value


def test_the_server_uses_these_same_rules():
    """One copy of the rules: what the tools report is what the server stores."""
    assert validation.normalize_key is normalize_key
    assert validation.sanitize_text is clean_text
    clean = validation.validate_fact("  Seat Preference ", "Vege\u200btarian")
    assert (clean.key, clean.value) == ("seat_preference", "Vegetarian")


def test_an_overlong_value_is_clamped_with_the_upstream_marker():
    assert clean_value("x" * 200) == "x" * 200
    assert clean_value("x" * 300) == "x" * 185 + " ...[truncated]"
    assert len(clean_value("word " * 100)) <= 200


def test_a_query_is_cut_to_the_same_100_characters_everywhere():
    assert clamp_query("  aisle " + "x" * 200) == ("aisle " + "x" * 200)[:100]
