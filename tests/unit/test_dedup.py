"""The upstream dedup rules, on their own."""

from __future__ import annotations

import pytest

from memoryadmin.extraction.dedup import Verdict, jaccard, judge, restates, tokens

pytestmark = pytest.mark.unit

HELD = {"seat_preference": "Prefers aisle seats", "travel_party": "Travels with spouse and kids"}


@pytest.mark.parametrize(
    ("key", "value", "verdict"),
    [
        ("seat_preference", "Prefers aisle seats", Verdict.DUPLICATE),
        ("seat_preference", "  PREFERS   aisle seats ", Verdict.DUPLICATE),
        ("seat_preference", "Prefers window seats", Verdict.UPDATE),
        ("aisle", "Prefers aisle seats on long flights", Verdict.DUPLICATE),  # contains held
        ("aisle", "aisle seats", Verdict.DUPLICATE),  # contained in held
        ("family", "Travels with spouse and the kids", Verdict.DUPLICATE),  # Jaccard 5/6
        ("family", "Travels with colleagues", Verdict.NEW),  # Jaccard 2/6
        ("home_airport", "Flies from Heathrow", Verdict.NEW),
    ],
)
def test_judge(key: str, value: str, verdict: Verdict) -> None:
    assert judge(key, value, HELD, HELD.values()) is verdict


def test_jaccard_threshold_is_inclusive() -> None:
    # {a b c} vs {a b c d e}: 3/5 = 0.6 exactly
    assert jaccard(tokens("a1 b1 c1"), tokens("a1 b1 c1 d1 e1")) == pytest.approx(0.6)
    assert restates("alpha beta gamma", "gamma beta alpha delta epsilon")
    assert not restates("alpha beta", "alpha gamma delta")  # 1/4


def test_tokens_ignore_case_and_punctuation() -> None:
    assert tokens("Aisle, please!") == frozenset({"aisle", "please"})
    assert tokens("喜歡靠走道，長程尤其如此") == frozenset({"喜歡靠走道", "長程尤其如此"})


def test_empty_values_restate_nothing() -> None:
    assert not restates("", "Prefers aisle seats")
    assert not restates("Prefers aisle seats", "   ")


def test_a_hyphen_inside_a_word_keeps_it_one_token() -> None:
    assert tokens("Non-stop flights, carry-on only") == frozenset(
        {"non-stop", "flights", "carry-on", "only"}
    )
    # "non-stop" and "non" + "stop" are not the same words
    assert not restates("Books non-stop flights", "Books stop non flights fast")


def test_values_without_words_share_nothing() -> None:
    assert jaccard(tokens("!!!"), tokens("???")) == 0.0
    assert not restates("!!!", "???")
