"""Turning untrusted candidate facts into clean ones: validate_fact, the write filter, and the
sensitive-content classifier. The semantics follow the upstream memory runtime (DESIGN.md)."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass

# The text rules live in the Django-free client package so that the agent's tools report keys
# exactly as the server stores them; this module re-exports them for the server side.
from memoryadmin.client.text import clean_text as sanitize_text
from memoryadmin.client.text import normalize_key
from memoryadmin.client.types import VALUE_MAX_LENGTH

from .errors import FactBlocked, FactInvalid
from .models import Category

logger = logging.getLogger(__name__)

CATEGORIES = frozenset(Category.values)
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class CleanFact:
    key: str
    value: str
    category: str


def normalize_value(value: str) -> str:
    """Lower-case, whitespace-collapsed form used to decide whether two values say the same."""
    return _WHITESPACE.sub(" ", value.strip().lower())


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
    clean_value = sanitize_text(value)[:VALUE_MAX_LENGTH].strip() if isinstance(value, str) else ""
    if not isinstance(value, str):
        errors["value"] = "Value must be text."
    elif not clean_value:
        errors["value"] = "Value is empty once cleaned."
    if category is None or category == "":
        clean_category = Category.PREFERENCE.value
    elif isinstance(category, str) and category.strip().lower() in CATEGORIES:
        clean_category = category.strip().lower()
    else:
        clean_category = ""
        errors["category"] = "Category must be one of: constraint, context, preference."
    if errors:
        raise FactInvalid("The fact is not valid.", fields=errors)
    return CleanFact(key=clean_key, value=clean_value, category=clean_category)


# --- The write filter --------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockRule:
    name: str
    pattern: re.Pattern[str]
    message: str


DEFAULT_BLOCK_RULES: tuple[BlockRule, ...] = (
    BlockRule(
        "email",
        re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
        "Looks like an e-mail address; contact details are not kept in memory.",
    ),
    BlockRule(
        "iban",
        re.compile(r"\b[A-Z]{2}\d{2}[ ]?(?:[A-Z0-9]{4}[ ]?){2,7}[A-Z0-9]{1,4}\b"),
        "Looks like a bank account (IBAN); financial details are not kept in memory.",
    ),
    BlockRule(
        "long_number",
        # Nine or more digits, optionally split by single spaces, dots, dashes, slashes or
        # underscores: cards, accounts, national IDs, passports and phone numbers. Dates,
        # prices and order numbers have fewer digits in a run.
        re.compile(r"(?<![\d])\d(?:[ \-./_]?\d){8,}"),
        "Looks like a card, account, ID or phone number; such numbers are not kept in memory.",
    ),
)


@dataclass(frozen=True)
class FilterVerdict:
    allowed: bool
    rule: str = ""
    message: str = ""


class MemoryWriteFilter:
    """Refuses facts that carry identifiers or contact details. Messages never echo the text."""

    def __init__(self, extra_patterns: Iterable[str] = ()) -> None:
        rules = list(DEFAULT_BLOCK_RULES)
        for index, source in enumerate(extra_patterns):
            try:
                compiled = re.compile(source, re.IGNORECASE)
            except re.error:
                logger.warning("memory filter: extra pattern #%d does not compile; skipped", index)
                continue
            rules.append(
                BlockRule(f"custom_{index}", compiled, "Matches a pattern the privacy team blocks.")
            )
        self.rules = tuple(rules)

    def check(self, key: str, value: str) -> FilterVerdict:
        text = f"{key} {value}"
        for rule in self.rules:
            if rule.pattern.search(text):
                return FilterVerdict(False, rule.name, rule.message)
        return FilterVerdict(True)

    def enforce(self, key: str, value: str) -> None:
        verdict = self.check(key, value)
        if not verdict.allowed:
            raise FactBlocked(verdict.message, fields={"value": verdict.message})


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


def classify_sensitive(key: str, value: str) -> str | None:
    """The special-category topic a fact touches (health, mobility, ...), or None.

    A word list, not a model: it is cheap, explainable to reviewers and errs towards review.
    """
    text = f"{key.replace('_', ' ')} {value}"
    for topic, pattern in _SENSITIVE_EN_PATTERNS.items():
        if pattern.search(text):
            return topic
    for topic, words in _SENSITIVE_ZH.items():
        if any(word in text for word in words):
            return topic
    return None
