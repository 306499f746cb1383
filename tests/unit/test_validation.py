"""validate_fact, the write filter and the sensitive classifier, as a caller sees them."""

import pytest
from django.core.exceptions import ValidationError

from memoryadmin.facts.errors import FactBlocked, FactInvalid, WriteFilterMisconfigured
from memoryadmin.facts.models import MemorySettings
from memoryadmin.facts.validation import (
    MemoryWriteFilter,
    classify_sensitive,
    normalize_key,
    session_tag,
    validate_blocked_patterns,
    validate_fact,
)
from memoryadmin_client.text import TRUNCATION_MARKER

pytestmark = pytest.mark.unit


def test_key_is_stripped_lower_cased_and_snake_cased():
    assert validate_fact("  Seat Preference ", "Aisle").key == "seat_preference"
    assert normalize_key("Meal-Preference!!") == "meal_preference"


def test_key_over_64_characters_is_clamped():
    assert len(validate_fact("a" * 65, "x").key) == 64
    assert validate_fact("word " * 20, "x").key == ("word_" * 13)[:64].rstrip("_")


def test_value_is_sanitized_and_clamped_to_200_with_the_upstream_marker():
    clean = validate_fact("note", "A\x00B\u202eC\u200d  D\n\tE" + "x" * 10_000)
    assert clean.value.startswith("ABC D E")
    assert len(clean.value) == 200
    assert clean.value.endswith(TRUNCATION_MARKER)


def test_value_of_exactly_200_characters_is_kept_whole():
    assert validate_fact("note", "y" * 200).value == "y" * 200


@pytest.mark.parametrize("value", ["!!!", "???", "... --- ...", "🛫🛬"])
def test_value_without_letters_or_digits_is_refused(value):
    with pytest.raises(FactInvalid) as caught:
        validate_fact("note", value)
    assert set(caught.value.fields) == {"value"}


def test_refused_facts_are_value_errors_as_upstream():
    with pytest.raises(ValueError):
        validate_fact("note", "")
    with pytest.raises(ValueError):
        MemoryWriteFilter().enforce("note", "jane@example.com")


def test_category_defaults_to_preference_and_unknown_is_rejected():
    assert validate_fact("seat", "Aisle").category == "preference"
    assert validate_fact("seat", "Aisle", " Constraint ").category == "constraint"
    with pytest.raises(FactInvalid) as caught:
        validate_fact("seat", "Aisle", "wish")
    assert "category" in caught.value.fields


@pytest.mark.parametrize("key", ["", "   ", "\x00\x00", "🛫🛬", "!!!"])
def test_empty_key_is_rejected_with_a_field_message(key):
    with pytest.raises(FactInvalid) as caught:
        validate_fact(key, "Aisle")
    assert "key" in caught.value.fields


def test_emoji_in_value_is_kept_and_non_text_is_rejected():
    assert validate_fact("mood", "Loves window views 🌅").value == "Loves window views 🌅"
    with pytest.raises(FactInvalid) as caught:
        validate_fact(12, None)
    assert set(caught.value.fields) == {"key", "value"}


def test_traditional_chinese_keys_and_values_survive():
    clean = validate_fact("座位 偏好", "偏好靠走道座位")
    assert (clean.key, clean.value) == ("座位_偏好", "偏好靠走道座位")


@pytest.mark.parametrize(
    "value",
    [
        "4111-1111-1111-1111",
        "5500 0000 0000 0004",
        "+886 912 345 678",
        "0912-345-678",
        "0912 345 678",
        "02-2345-6789",
        "(02) 2345-6789",
        "call (010) 555-0100",
        "+1 (415) 555-0134",
        "+1 415.555.0134",
        "+44 20 7946 0958",
        "A123456789",
        "passport 987654321",
        "DE89 3704 0044 0532 0130 00",
        "GB82WEST12345698765432",
        "traveller@example.org",
    ],
)
def test_filter_blocks_identifiers_and_never_echoes(value):
    write_filter = MemoryWriteFilter()
    verdict = write_filter.check("note", value)
    assert not verdict.allowed
    assert value not in verdict.message
    with pytest.raises(FactBlocked) as caught:
        write_filter.enforce("note", value)
    assert value not in str(caught.value) and value not in str(caught.value.fields)


@pytest.mark.parametrize(
    "value",
    [
        "$1,800",
        "EU 42",
        "2026-08-17",
        "ORD-2026-0817",
        "Flight CI100 at 21:00",
        "Row 12",
        "Seat 12A",
        "Budget (about $1,800) per trip",
    ],
)
def test_filter_keeps_prices_sizes_dates_and_order_numbers(value):
    assert MemoryWriteFilter().check("note", value).allowed


def test_extra_patterns_from_settings_block():
    write_filter = MemoryWriteFilter([r"frequent flyer"])
    assert not write_filter.check("note", "Frequent Flyer gold").allowed
    assert write_filter.check("note", "Prefers aisle").allowed


def test_key_and_value_are_checked_each_on_their_own():
    """Joined, "row_1234" and "56789 bags" would read as a nine-digit number."""
    write_filter = MemoryWriteFilter()
    assert write_filter.check("row_1234", "56789 bags", raw_key="row 1234").allowed
    assert not write_filter.check("contact", "ok", raw_key="jane@example.com").allowed
    assert not write_filter.check("passport_123456789", "ok").allowed


@pytest.mark.parametrize("bad", ["(unclosed", "[a-", "*", "", "x*"])
def test_an_unusable_pattern_makes_the_filter_fail_closed(bad):
    write_filter = MemoryWriteFilter([r"frequent flyer", bad])
    with pytest.raises(WriteFilterMisconfigured) as caught:
        write_filter.check("note", "Prefers aisle")
    assert bad not in caught.value.message or not bad
    with pytest.raises(WriteFilterMisconfigured):
        write_filter.enforce("note", "Prefers aisle")


def test_validate_blocked_patterns_names_each_bad_pattern_by_position():
    patterns = [r"\bPNR\b", "frequent flyer"]
    assert validate_blocked_patterns(patterns) == patterns
    with pytest.raises(ValidationError) as caught:
        validate_blocked_patterns([r"\bPNR\b", "(unclosed", 7])
    assert [message[:10] for message in caught.value.messages] == ["Pattern 2:", "Pattern 3:"]
    with pytest.raises(ValidationError):
        validate_blocked_patterns("not a list")


def test_the_settings_model_refuses_an_invalid_pattern_on_full_clean():
    row = MemorySettings(blocked_patterns=["(unclosed"])
    with pytest.raises(ValidationError) as caught:
        row.full_clean()
    assert "blocked_patterns" in caught.value.message_dict
    MemorySettings(blocked_patterns=[r"\bPNR\b"]).full_clean()


@pytest.mark.parametrize(
    ("key", "value", "topic"),
    [
        ("health", "I'm diabetic", "health"),
        ("mobility", "我需要輪椅", "mobility"),
        ("assistance", "Needs a wheelchair at the gate", "mobility"),
        ("pregnancy", "Is pregnant, due in March", "pregnancy"),
        ("meal", "Halal meals only", "religion"),
        ("meal", "需要清真餐", "religion"),
        ("hearing", "聽障，請用文字聯絡", "disability"),
    ],
)
def test_sensitive_classifier_finds_special_categories(key, value, topic):
    assert classify_sensitive(key, value) == topic


@pytest.mark.parametrize(
    ("key", "value"),
    [("seat_preference", "Prefers aisle seats"), ("meal", "Vegetarian meals"), ("座位", "靠窗")],
)
def test_sensitive_classifier_leaves_ordinary_facts(key, value):
    assert classify_sensitive(key, value) is None


def test_session_tag_is_twelve_hex_and_never_the_raw_id():
    tag = session_tag("sess_abc")
    assert len(tag) == 12 and int(tag, 16) >= 0 and tag != "sess_abc"
    assert session_tag(None) == ""


def test_a_misconfigured_filter_is_a_refusal_every_form_already_handles():
    """Forms that catch FactBlocked refuse the save (no 500) when the filter fails closed."""
    assert issubclass(WriteFilterMisconfigured, FactBlocked)
    assert issubclass(WriteFilterMisconfigured, ValueError)


# --- RE2: no pattern can hold a worker (issue 19) ------------------------------------------------


def _finishes_within(seconds: float, work) -> bool:
    """Runs `work` in a child process: a backtracking matcher would still be running when we
    look (in a thread it would hold the GIL and freeze this test instead of failing it)."""
    from tests.support.deadline import TIMED_OUT, run_within

    return run_within(seconds, work) is not TIMED_OUT


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(x+x+)+y", r"^(\w+\s?)+$", r"(a|aa)+$"])
def test_a_catastrophic_pattern_is_accepted_and_runs_in_linear_time(pattern):
    assert validate_blocked_patterns([pattern]) == [pattern]
    write_filter = MemoryWriteFilter([pattern])
    hostile = "a" * 5000 + "!"  # Python's re would need 2**5000 steps on (a+)+$
    assert _finishes_within(5, lambda: write_filter.check("note", hostile))
    assert _finishes_within(5, lambda: write_filter.check("note", "x" * 5000))


@pytest.mark.parametrize(
    ("pattern", "word"),
    [
        (r"(a)\1", "backreferences"),
        (r"flyer(?=\d)", "lookaround"),
        (r"(?<!gold )member", "lookaround"),
        (r"(?!x)loyalty", "lookaround"),
    ],
)
def test_a_pattern_re2_cannot_run_is_refused_on_save_with_a_clear_message(pattern, word):
    with pytest.raises(ValidationError) as caught:
        validate_blocked_patterns(["ok", pattern])
    [message] = caught.value.messages
    assert message.startswith("Pattern 2: ") and word in message and pattern not in message
    with pytest.raises(WriteFilterMisconfigured):  # stored some other way: fails closed
        MemoryWriteFilter([pattern]).check("note", "Prefers aisle")


@pytest.mark.parametrize(
    "value",
    [
        "聯絡我jane@example.com",
        "電話０９１２３４５６７８",
        "acct DE89370400440532013000",
        "帳號 DE89 3704 0044 0532 0130 00",
        "call +886 912 345 678",
        "9876543210",
    ],
)
def test_the_built_in_rules_keep_their_unicode_reach_on_re2(value):
    assert not MemoryWriteFilter().check("note", value).allowed


def test_a_text_several_rules_match_is_named_by_the_first_rule_in_order():
    # the built-in rules are searched as one pattern first; the verdict still names the first
    # rule that matches, in the rules' order, and the first text (raw key, key, value) that does
    verdict = MemoryWriteFilter([r"window"]).check("seat", "mail 0912345678@x.com by the window")
    assert (verdict.allowed, verdict.rule) == (False, "email")
    verdict = MemoryWriteFilter([r"window"]).check("seat", "by the window")
    assert (verdict.allowed, verdict.rule) == (False, "custom_0")
    verdict = MemoryWriteFilter().check("note", "a@b.com", raw_key="call 0912 345 678")
    assert verdict.rule == "long_number"
