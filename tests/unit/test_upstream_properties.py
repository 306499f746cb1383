"""Generated filter, validation and dedup inputs, each judged by our code and by the reference
model of upstream (tests/upstream/reference.py): phone numbers in every script and width,
e-mail addresses, card numbers, dates, CJK text, near-duplicates. No database."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tests.support.hypothesis_home  # noqa: F401 - before any Hypothesis test runs
from memoryadmin.extraction.dedup import Verdict, judge
from memoryadmin.facts.errors import FactInvalid
from memoryadmin.facts.validation import MemoryWriteFilter, normalize_value, validate_fact
from tests.upstream import reference
from tests.upstream.reference import Candidate

pytestmark = pytest.mark.unit

FILTER = MemoryWriteFilter()
EXAMPLES = settings(max_examples=400, deadline=None, database=None, derandomize=True)

# Decimal digits of several scripts: ASCII, full-width, Arabic-Indic, Devanagari, Bengali, Thai.
DIGIT_ZEROS = [0x30, 0xFF10, 0x660, 0x966, 0x9E6, 0xE50]
SEPARATORS = [
    " ",
    "-",
    ".",
    "/",
    "\uff0d",
    "\uff0e",
    "\u3000",
    "\u2010",
    "\u2013",
    "\u30fc",
    "\uff0f",
]


@st.composite
def phone_numbers(draw) -> str:
    """Nine to thirteen digits in one script, grouped with one separator kind, maybe a '+'
    (plain or full-width) and words around it."""
    zero = draw(st.sampled_from(DIGIT_ZEROS))
    digits = draw(st.lists(st.integers(0, 9), min_size=9, max_size=13))
    groups, rest = [], [chr(zero + d) for d in digits]
    while rest:
        size = draw(st.integers(2, 4))
        groups.append("".join(rest[:size]))
        rest = rest[size:]
    number = draw(st.sampled_from(SEPARATORS)).join(groups)
    plus = draw(st.sampled_from(["", "+", "\uff0b"]))
    before = draw(st.sampled_from(["", "Call ", "電話 ", "連絡先："]))
    return f"{before}{plus}{number}"


@st.composite
def emails(draw) -> str:
    user = draw(st.text("abcxyz019._", min_size=1, max_size=8)).strip(".") or "a"
    host = draw(st.text("abcxyz", min_size=1, max_size=8))
    at = draw(st.sampled_from(["@", "\uff20"]))
    dot = draw(st.sampled_from([".", "\uff0e"]))
    return f"mail {user}{at}{host}{dot}com"


@st.composite
def card_numbers(draw) -> str:
    digits = "".join(str(d) for d in draw(st.lists(st.integers(0, 9), min_size=16, max_size=16)))
    separator = draw(st.sampled_from([" ", "-", ""]))
    text = separator.join(digits[i : i + 4] for i in range(0, 16, 4))
    return (
        unicodedata.normalize("NFKC", text)
        if draw(st.booleans())
        else "".join(chr(ord(c) + 0xFF10 - 0x30) if c.isdigit() else c for c in text)
    )


@st.composite
def dates(draw) -> str:
    year, month, day = (
        draw(st.integers(1990, 2099)),
        draw(st.integers(1, 12)),
        draw(st.integers(1, 28)),
    )
    separator = draw(st.sampled_from(["-", "/", "."]))
    day_first = draw(st.booleans())
    date = (
        f"{day:02d}{separator}{month:02d}{separator}{year}"
        if day_first
        else f"{year}{separator}{month:02d}{separator}{day:02d}"
    )
    time = draw(st.sampled_from(["", " 08:30", " 23:59", " 7:05", " 12:00:30"]))
    text = f"Flies on {date}{time}"
    return (
        text
        if draw(st.booleans())
        else unicodedata.normalize("NFKC", text).translate(
            {ord(c): ord(c) + 0xFF10 - 0x30 for c in "0123456789"}
        )
    )


cjk_text = st.text(
    alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x4FFF)
    | st.sampled_from(list("，。座位靠窗走道 ")),
    min_size=1,
    max_size=30,
).filter(lambda t: any(char.isalnum() for char in t))


def blocked(value: str) -> bool:
    return not FILTER.check("note", value).allowed


@EXAMPLES
@given(phone_numbers())
def test_phone_numbers_in_every_script_and_width_are_blocked(value):
    assert reference.write_filter_allows("note", value) is False
    assert blocked(value)


@EXAMPLES
@given(emails())
def test_email_addresses_in_any_width_are_blocked(value):
    assert reference.write_filter_allows("note", value) is False
    assert blocked(value)


@EXAMPLES
@given(card_numbers())
def test_card_numbers_are_blocked(value):
    assert reference.write_filter_allows("note", value) is False
    assert blocked(value)


@EXAMPLES
@given(dates())
def test_dates_and_times_are_kept(value):
    assert reference.write_filter_allows("note", value) is True
    assert not blocked(value)


@EXAMPLES
@given(cjk_text)
def test_cjk_text_is_kept_and_cleaned_alike(value):
    assert reference.write_filter_allows("note", value) is True
    assert not blocked(value)
    ours = validate_fact("note", value)
    model = reference.validate_fact("note", value, ours=True)
    assert (ours.key, ours.value, ours.category) == (model.key, model.value, model.category)


TEXT = st.lists(
    st.sampled_from(
        list("abcXYZ ,!<>/\t\n")
        + ["\u200b", "\u3000", "e\u0301", "座", "<system>", "</user>", "\uff1cuser\uff1e"]
    ),
    max_size=230,
).map("".join)


@EXAMPLES
@given(
    key=st.text(alphabet="abcXY -!_座\u200b", max_size=80),
    value=TEXT,
    category=st.sampled_from([None, "preference", "Constraint ", "context", "other"]),
)
def test_validate_fact_matches_the_model(key, value, category):
    """Cleaning, role markers, upstream's truncation, empty and unknown inputs: the same
    verdict and the same clean fact (with KEY_PUNCTUATION and TRUNCATION_TRIMS_SPACE)."""
    try:
        model = reference.validate_fact(key, value, category, ours=True)
    except reference.Invalid:
        with pytest.raises(FactInvalid):
            validate_fact(key, value, category)
        return
    ours = validate_fact(key, value, category)
    assert (ours.key, ours.value, ours.category) == (model.key, model.value, model.category)
    assert len(ours.value) <= 200


WORDS = [
    "aisle",
    "window",
    "seat",
    "prefers",
    "coffee",
    "black",
    "座位",
    "靠窗",
    "Ａｉｓｌｅ",
    "ＡＩＳＬＥ",
    "seats",
]


@EXAMPLES
@given(
    held=st.dictionaries(
        st.sampled_from(["seat", "drink", "meal"]),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
        max_size=3,
    ),
    key=st.sampled_from(["seat", "drink", "new_topic"]),
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    spacing=st.sampled_from([" ", "  ", "\u3000"]),
)
def test_dedup_matches_the_model_on_near_duplicates(held, key, words, spacing):
    """Full-width and case variants of a held value are duplicates (folded before dedup)."""
    value = spacing.join(words)
    model = reference.is_duplicate(held, Candidate(key, value))
    assert (judge(key, value, held, held.values()) == Verdict.DUPLICATE) is model


def test_a_full_width_restatement_is_the_same_fact_for_dedup():
    assert normalize_value("Ｐｒｅｆｅｒｓ ＡＩＳＬＥ") == normalize_value("prefers aisle")
    held = {"seat": "Prefers aisle"}
    assert judge("seat", "Ｐｒｅｆｅｒｓ　ａｉｓｌｅ", held, held.values()) == Verdict.DUPLICATE
