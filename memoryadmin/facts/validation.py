"""Turning untrusted candidate facts into clean ones: validate_fact, the write filter, and the
sensitive-content classifier. The semantics follow the upstream memory runtime (DESIGN.md)."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import re2
from django.core.exceptions import ValidationError

# The text rules live in the Django-free client package so that the agent's tools report keys
# exactly as the server stores them; this module re-exports them for the server side.
from memoryadmin_client.text import clean_text as sanitize_text
from memoryadmin_client.text import clean_value, fold, has_meaning, normalize_key

from .choices import Category
from .errors import FactBlocked, FactInvalid, WriteFilterMisconfigured

logger = logging.getLogger(__name__)

__all__ = [
    "CleanFact",
    "SUBJECT_ID_MAX_LENGTH",
    "clean_subject_id",
    "EVIDENCE_MAX_LENGTH",
    "clean_evidence",
    "MemoryWriteFilter",
    "blocked_pattern_errors",
    "REASON_MAX_LENGTH",
    "RESTRICTION_NOTE_MAX_LENGTH",
    "classify_sensitive",
    "clean_reason",
    "filter_text",
    "fold",
    "normalize_key",
    "normalize_value",
    "sanitize_text",
    "session_tag",
    "validate_blocked_patterns",
    "validate_fact",
]

CATEGORIES = frozenset(Category.values)
REASON_MAX_LENGTH = 500  # every reason a person or a system gives for a change
# What the traveller says is wrong with a fact they stopped the use of (cleaned as a reason).
RESTRICTION_NOTE_MAX_LENGTH = REASON_MAX_LENGTH
# A quote of the traveller's own words behind a fact (memoryadmin_client.types says the same
# for save_memory; tests/usage/test_agent_quotes.py checks they agree).
EVIDENCE_MAX_LENGTH = 200
SUBJECT_ID_MAX_LENGTH = 128  # the models' column width; a traveller's id is opaque otherwise
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class CleanFact:
    key: str
    value: str
    category: str
    evidence: str = ""  # the checked quote behind it, "" when none (clean_evidence)


def normalize_value(value: str) -> str:
    """The form extraction's dedup compares (NFKC-folded, lower-case, whitespace collapsed), so a
    proposal in full-width letters or digits is the held fact it restates. A store's own
    "unchanged" test compares the stored text exactly: a change of case is a change there."""
    return _WHITESPACE.sub(" ", fold(value).strip().lower())


def clean_subject_id(subject_id: object) -> str:
    """Subject ids are opaque, but bounded and free of control characters."""
    if not isinstance(subject_id, str):
        raise FactInvalid("Subject id must be text.", fields={"subject_id": "Must be text."})
    if (
        not subject_id
        or sanitize_text(subject_id) != subject_id
        or " " in subject_id
        or "/" in subject_id  # it travels as one URL path segment
        or subject_id in {".", ".."}  # which URL resolution would remove or climb out of
    ):
        raise FactInvalid(
            "Subject id is empty, is . or .., or has spaces, slashes or control characters.",
            fields={
                "subject_id": "Must be non-empty, not . or .., without spaces, slashes or "
                "control chars."
            },
        )
    if len(subject_id) > SUBJECT_ID_MAX_LENGTH:
        raise FactInvalid(
            "Subject id is too long.",
            fields={"subject_id": f"At most {SUBJECT_ID_MAX_LENGTH} characters."},
        )
    return subject_id


def clean_reason(reason: str | None) -> str:
    """A reason as stored: sanitized and cut to REASON_MAX_LENGTH ("" when none was given)."""
    return sanitize_text(reason or "")[:REASON_MAX_LENGTH]


def session_tag(session_id: str | None) -> str:
    """The 12-hex tag stored instead of a raw session id (which may be a secret-bearing token)."""
    if not session_id:
        return ""
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:12]


def validate_fact(key: object, value: object, category: object = None) -> CleanFact:
    """Normalize one candidate; raise FactInvalid with per-field messages when it can't be used."""
    errors: dict[str, str] = {}
    clean_key = normalize_key(key) if isinstance(key, str) else ""
    if not isinstance(key, str):
        errors["key"] = "Key must be text."
    elif not clean_key:
        errors["key"] = (
            "Key is empty once cleaned; use a short snake_case topic like seat_preference."
        )
    value_text = clean_value(value) if isinstance(value, str) else ""
    if not isinstance(value, str):
        errors["value"] = "Value must be text."
    elif not value_text:
        errors["value"] = "Value is empty once cleaned."
    elif not has_meaning(value_text):
        errors["value"] = "Value has no letters or digits; say the fact in words."
    if category is None or category == "":
        clean_category = Category.PREFERENCE.value
    elif isinstance(category, str) and category.strip().lower() in CATEGORIES:
        clean_category = category.strip().lower()
    else:
        clean_category = ""
        errors["category"] = "Category must be one of: constraint, context, preference."
    if errors:
        raise FactInvalid("The fact is not valid.", fields=errors)
    return CleanFact(key=clean_key, value=value_text, category=clean_category)


# --- The write filter --------------------------------------------------------------------------


def _re2_compile(source: str, *, ignore_case: bool = False) -> Any:
    """Every pattern of the write filter is compiled by RE2, which matches in time linear in
    the text: every agent write passes through the filter, and a backtracking pattern such as
    `(a+)+$` would hold a web worker on a hostile value. RE2 has no backreferences or
    lookaround; such a pattern raises re2.error (and is refused when saved). Its \\d, \\w, \\s and
    \\b are ASCII: the built-in rules spell out the Unicode classes they mean."""
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False  # the library would print the pattern to stderr
    return re2.compile(source, options)


@dataclass(frozen=True)
class BlockRule:
    name: str
    pattern: Any  # a compiled RE2 pattern (`search` as in `re`)
    message: str


# Unicode classes as Python's `re` reads \w, \d and \s (RE2's shorthands are ASCII only).
_W = r"\p{L}\p{N}_"
_D = r"\p{Nd}"
_S = r"[\s\p{Z}]"

DEFAULT_BLOCK_RULES: tuple[BlockRule, ...] = (
    BlockRule(
        "email",
        _re2_compile(rf"[{_W}.+-]+@[{_W}-]+(?:\.[{_W}-]+)+"),
        "Looks like an e-mail address; contact details are not kept in memory.",
    ),
    BlockRule(
        "iban",
        _re2_compile(rf"\b[A-Z]{{2}}{_D}{{2}}[ ]?(?:[A-Z0-9]{{4}}[ ]?){{2,7}}[A-Z0-9]{{1,4}}\b"),
        "Looks like a bank account (IBAN); financial details are not kept in memory.",
    ),
    BlockRule(
        "long_number",
        # Nine or more digits, optionally split by single spaces, dots, dashes, slashes or
        # underscores, or by the brackets of an area code ("(010) 555-0100",
        # "+1 (415) 555-0134"): cards, accounts, national IDs, passports and phone numbers
        # however they are written, Taiwanese ones included ("02-2345-6789", "0912 345 678",
        # "+886 912 345 678"). Dates, prices, sizes, seats and order numbers have fewer digits
        # in a run. The text is NFKC-folded first (full-width digits, dashes and brackets become
        # plain ones); digits of every script count, and the dashes include the ones Chinese
        # and Japanese keyboards type (U+2010-2015, U+2212, U+30FC). Dates and times are masked
        # before this rule runs (`filter_text`). The run starts at the text's start or after a
        # non-digit (RE2 has no lookbehind; for "is there a match" it is the same test).
        _re2_compile(
            rf"(?:^|[^{_D}]){_D}(?:(?:[ \-./_\x{{2010}}-\x{{2015}}\x{{2212}}\x{{30fc}}]"
            rf"|{_S}?\({_S}?|{_S}?\)[ \-.]?)?{_D}){{8,}}"
        ),
        "Looks like a card, account, ID or phone number; such numbers are not kept in memory.",
    ),
)


# Whether any built-in rule matches, in one search (each is case-sensitive, as compiled above).
_ANY_DEFAULT_RULE = _re2_compile(
    "|".join(f"(?:{rule.pattern.pattern})" for rule in DEFAULT_BLOCK_RULES)
)


# A calendar date with a four-digit year (2026-09-12, 2026/09/12, 12.09.2026, 9/12/2026) and a
# clock time (08:30): an ordinary date and time together hold nine or more digits, which the
# long_number rule would take for a phone number. They are masked before the rules run; their
# digits are then no part of any run. A date glued to more digits ("2026/09/12/345") is not one.
_DATE_OR_TIME = re.compile(
    r"(?<![\d\-./_])(?:"
    r"(?:19|20)\d\d([-/.])(?:0?[1-9]|1[0-2])\1(?:0?[1-9]|[12]\d|3[01])"
    r"|(?:0?[1-9]|[12]\d|3[01])([-/.])(?:0?[1-9]|[12]\d|3[01])\2(?:19|20)\d\d"
    r"|(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?"
    r")(?![\d]|[-./_]\d)"
)


# A date or time needs a digit that `\d` reads: without one the text is left as it is.
_DIGIT = re.compile(r"\d")


def filter_text(text: str) -> str:
    """What the write filter reads: the NFKC fold of the text, with dates and times masked."""
    folded = fold(text)
    if _DIGIT.search(folded) is None:
        return folded
    return _DATE_OR_TIME.sub("#", folded)


@dataclass(frozen=True)
class FilterVerdict:
    allowed: bool
    rule: str = ""
    message: str = ""


BLOCKED_PATTERN_MAX_LENGTH = 500


def blocked_pattern_problem(source: object) -> str | None:
    """Why a privacy admin's extra pattern cannot be used, or None when it can. The message
    says what is wrong without repeating the pattern."""
    if not isinstance(source, str):
        return "Must be text."
    if not source.strip():
        return "Must not be empty."
    if len(source) > BLOCKED_PATTERN_MAX_LENGTH:
        return f"At most {BLOCKED_PATTERN_MAX_LENGTH} characters."
    try:
        re.compile(source, re.IGNORECASE)
    except re.error as exc:
        return f"Not a valid regular expression ({exc.msg})."
    try:
        compiled = _re2_compile(source, ignore_case=True)
    except re2.error:
        return (
            "Uses a feature the filter cannot run in safe time: backreferences (\\1) and "
            "lookaround ((?=, (?!, (?<=, (?<!) are not supported; rewrite it without them."
        )
    if compiled.search("") is not None:
        return "Matches empty text, so it would block every fact."
    return None


def blocked_pattern_errors(patterns: object) -> dict[int, str]:
    """Position -> problem for every unusable pattern (empty when all are fine)."""
    if not isinstance(patterns, list | tuple):
        return {-1: "Must be a list of regular expressions."}
    return {
        index: problem
        for index, source in enumerate(patterns)
        if (problem := blocked_pattern_problem(source)) is not None
    }


def validate_blocked_patterns(patterns: object) -> list[str]:
    """The check every writer of MemorySettings.blocked_patterns runs before saving (the
    model's clean(), the settings form, commands): a pattern that does not compile would
    otherwise switch a privacy rule off without anyone noticing. Returns the patterns; raises
    django's ValidationError with one message per bad pattern (numbered from 1)."""
    errors = blocked_pattern_errors(patterns)
    if errors:
        raise ValidationError(
            [
                message if index < 0 else f"Pattern {index + 1}: {message}"
                for index, message in sorted(errors.items())
            ],
            code="invalid_pattern",
        )
    return list(patterns)  # type: ignore[call-overload]


class MemoryWriteFilter:
    """Refuses facts that carry identifiers or contact details. Messages never echo the text.

    Fails closed: if an extra pattern is unusable (it should have been refused when saved, but
    the settings row may have been written some other way), every check raises
    WriteFilterMisconfigured instead of silently skipping the rule."""

    def __init__(self, extra_patterns: Iterable[str] = ()) -> None:
        rules = list(DEFAULT_BLOCK_RULES)
        extra = list(extra_patterns or [])
        self.invalid_patterns: tuple[int, ...] = tuple(sorted(blocked_pattern_errors(extra)))
        if self.invalid_patterns:
            logger.error(
                "memory filter: blocked pattern(s) %s unusable; writes refused until fixed",
                ", ".join(f"#{index + 1}" for index in self.invalid_patterns),
            )
        else:
            rules.extend(
                BlockRule(
                    f"custom_{index}",
                    _re2_compile(source, ignore_case=True),
                    "Matches a pattern the privacy team blocks.",
                )
                for index, source in enumerate(extra)
            )
        self.rules = tuple(rules)
        self._extra_rules = self.rules[len(DEFAULT_BLOCK_RULES) :]

    def check(self, key: str, value: str, *, raw_key: str | None = None) -> FilterVerdict:
        """Each text on its own (the raw key as sent, the normalized key, the value): joining
        them would let the digits of a key and a value add up to a "number" neither holds."""
        if self.invalid_patterns:
            raise WriteFilterMisconfigured(
                "The memory write filter has an invalid blocked pattern; nothing is saved "
                "until a privacy admin fixes it in the memory settings."
            )
        # The raw key is most often the key itself: each distinct text is read once.
        for text in dict.fromkeys((raw_key, key, value)):
            if not text:
                continue
            text = filter_text(text)  # a rule matches every NFKC-equivalent form of its text
            # The built-in rules in one search: a text that matches none (nearly every one) is
            # read once, not once per rule; one that matches is then read rule by rule.
            if _ANY_DEFAULT_RULE.search(text) is None and not any(
                rule.pattern.search(text) for rule in self._extra_rules
            ):
                continue
            for rule in self.rules:
                if rule.pattern.search(text):
                    return FilterVerdict(False, rule.name, rule.message)
        return FilterVerdict(True)

    def enforce(self, key: str, value: str, *, raw_key: str | None = None) -> None:
        verdict = self.check(key, value, raw_key=raw_key)
        if not verdict.allowed:
            raise FactBlocked(verdict.message, fields={"value": verdict.message})


def clean_evidence(
    quote: object, *, write_filter: MemoryWriteFilter, sources: Iterable[str] | None = None
) -> str:
    """The quote behind a fact as stored, or "" when it must be dropped: not text, empty, longer
    than EVIDENCE_MAX_LENGTH, refused by the write filter, or (given `sources`, the user's
    messages of the turn) not a literal part of one of them once both are cleaned like values
    (an assistant's sentence or a paraphrase is never kept). Never raises for a bad quote: the
    fact is judged on its own."""
    if not isinstance(quote, str):
        return ""
    text = sanitize_text(quote)
    if not text or len(text) > EVIDENCE_MAX_LENGTH or not has_meaning(text):
        return ""
    if sources is not None and not any(text in sanitize_text(source) for source in sources):
        return ""
    if not write_filter.check("", text).allowed:
        return ""
    return text


# --- The sensitive-content classifier -----------------------------------------------------------

_SENSITIVE_EN: dict[str, tuple[str, ...]] = {
    "health": (
        r"diabet\w*",
        r"insulin",
        r"asthma\w*",
        r"allerg\w*",
        r"epilep\w*",
        r"seizures?",
        r"heart condition",
        r"cardiac",
        r"pacemaker",
        r"dialysis",
        r"cancer",
        r"chemo\w*",
        r"medication",
        r"medicines?",
        r"medical",
        r"oxygen",
        r"cpap",
        r"illness",
        r"disease",
        r"anxiety",
        r"depression",
        r"panic attacks?",
        r"hiv",
        r"surgery",
        r"injur\w*",
        r"celiac",
        r"coeliac",
        r"migraines?",
    ),
    "mobility": (
        r"wheel ?chairs?",
        r"crutch\w*",
        r"walkers?",
        r"walking (?:stick|cane|frame)",
        r"mobility",
        r"cannot walk",
        r"can't walk",
        r"limp\w*",
        r"prosthe\w*",
        r"amputee",
    ),
    "disability": (
        r"disab\w*",
        r"blind",
        r"deaf",
        r"hard of hearing",
        r"hearing aids?",
        r"visually impaired",
        r"hearing impaired",
        r"autis\w*",
        r"guide dog",
        r"service (?:dog|animal)",
        r"dementia",
    ),
    "pregnancy": (r"pregnan\w*", r"expecting a baby", r"weeks along", r"trimester"),
    "religion": (
        r"relig\w*",
        r"muslim",
        r"islam\w*",
        r"jewish",
        r"judaism",
        r"christian\w*",
        r"catholic",
        r"hindu\w*",
        r"buddhis\w*",
        r"sikh",
        r"halal",
        r"kosher",
        r"prayers?",
        r"ramadan",
        r"sabbath",
    ),
}
_SENSITIVE_ZH: dict[str, tuple[str, ...]] = {
    "health": (
        "糖尿病",
        "胰島素",
        "氣喘",
        "哮喘",
        "過敏",
        "癲癇",
        "心臟",
        "洗腎",
        "透析",
        "癌",
        "化療",
        "藥物",
        "服藥",
        "疾病",
        "生病",
        "焦慮",
        "憂鬱",
        "手術",
        "受傷",
        "氧氣",
    ),
    "mobility": ("輪椅", "拐杖", "助行器", "行動不便", "不良於行"),
    "disability": ("身障", "殘障", "身心障礙", "視障", "聽障", "失明", "耳聾", "助聽器", "導盲犬"),
    "pregnancy": ("懷孕", "孕婦", "身孕", "懷胎"),
    "religion": (
        "宗教",
        "穆斯林",
        "回教",
        "伊斯蘭",
        "清真",
        "猶太",
        "基督",
        "天主教",
        "佛教",
        "印度教",
        "禱告",
    ),
}
_SENSITIVE_EN_PATTERNS = {
    topic: re.compile(r"\b(?:" + "|".join(words) + r")\b", re.IGNORECASE)
    for topic, words in _SENSITIVE_EN.items()
}


_SENSITIVE_ZH_PATTERNS = {
    topic: re.compile("|".join(map(re.escape, words))) for topic, words in _SENSITIVE_ZH.items()
}


def classify_sensitive(key: str, value: str) -> str | None:
    """The special-category topic a fact touches (health, mobility, ...), or None.

    A word list, not a model: it is cheap, explainable to reviewers and errs towards review.
    """
    text = f"{key.replace('_', ' ')} {value}"
    for topic, pattern in _SENSITIVE_EN_PATTERNS.items():
        if pattern.search(text):
            return topic
    for topic, pattern in _SENSITIVE_ZH_PATTERNS.items():
        if pattern.search(text):
            return topic
    return None
