"""A reference model of `commerce_common.memory`, written by hand from its documented behaviour.

Upstream is not installed here. What it does is known from the seed article (the pipeline
validate_fact -> MemoryWriteFilter -> duplicate check -> MemoryStore, the store protocol, tier
one), upstream's public docstrings as quoted in the README and DESIGN.md, and issue 20 (NFKC
folding, the truncation marker, batch order, `delete_fact(s, "")`, role markers, the limits of
upstream's `MemoryFact`). No upstream code is copied or imported.

Two layers:

* `UpstreamStore`, `validate_fact`, `write_filter_allows`, `is_duplicate`: upstream as it is;
* `ExpectedStore`: upstream with every divergence this project keeps on purpose, each one a
  named entry of `DIVERGENCES` (the README's "Differences from commerce_common.memory" table,
  row by row) and applied by name in the code, so a mismatch the state machine finds is either
  a bug here or a divergence nobody wrote down.

Time is a logical clock: every fact written gets the next tick, so "newer" is exact.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

KEY_MAX = 64
VALUE_MAX = 200
QUERY_MAX = 100
TIER_ONE_CAP = 8
MARKER = " ...[truncated]"  # upstream keeps 185 characters, a space and "...[truncated]"
FENCE = "[removed]"


class MemoryCategory(StrEnum):
    """Upstream's own enum: a class of its own, so `is` against ours is False (see
    ENUM_IDENTITY)."""

    PREFERENCE = "preference"
    CONSTRAINT = "constraint"
    CONTEXT = "context"


# --- the divergences, by name (README: "Differences from commerce_common.memory") --------------

DIVERGENCES: dict[str, str] = {
    "SERVER_STAMPS_TIME": "live writes get the server's time and a 12-hex session tag, not the "
    "caller's updated_at / source_session_id (compared here as order only)",
    "KEY_PUNCTUATION": "every write normalizes the key, punctuation to `_` as well as spaces",
    "STORE_VALIDATES": "the stores run validate_fact on every write: values cleaned "
    "(whitespace, NFC, invisible characters, role markers), clamped with the marker, keys "
    "normalized; a fact that is empty once cleaned is a ValueError and the batch is not written",
    "FILTER_ON_SERVER": "the write filter runs in the store for every writer; a blocked fact is "
    "a ValueError and the batch is not written",
    "SENSITIVE_HELD": "special-category facts from the agent wait for review and are not served",
    "SUBJECT_ID_RULES": "subject ids are 1-128 characters without spaces, slashes, control "
    "characters, and not . or ..; anything else is a ValueError",
    "MEMORY_OFF": "memory off empties reads and refuses saves (never exercised here)",
    "LONG_VALUES": "upstream's MemoryFact refuses values over 200 and keys over 64 characters; "
    "ours accepts them and the stores clamp them",
    "QUERY_CUT": "search queries are cut to 100 characters",
    "DELETE_NORMALISES_KEY": "delete_fact normalizes the key as writes do",
    "RESTATED_KEEPS_DATE": "restating a fact exactly (same value and category) changes nothing, "
    "not even its date; upstream restamps it",
    "TRUNCATION_TRIMS_SPACE": "when the 185 kept characters end in spaces they are dropped "
    "before the marker",
    "ENUM_IDENTITY": "our MemoryCategory is another class than upstream's; `is` comparisons need "
    "the one-line adapter of the README",
}


# --- text rules ---------------------------------------------------------------------------------

_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})
_ROLE = re.compile(
    r"<\s*/?\s*(?:system|assistant|user|human|developer|tool|function)\b[^<>]*>", re.IGNORECASE
)


def sanitize(text: str) -> str:
    """NFC, invisible characters dropped, whitespace runs to one space, trimmed."""
    out = []
    for char in unicodedata.normalize("NFC", text):
        if char.isspace():
            out.append(" ")
        elif unicodedata.category(char) not in _INVISIBLE:
            out.append(char)
    return re.sub(r" +", " ", "".join(out)).strip()


def fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def remove_fences(text: str) -> str:
    # Role markers written with full-width brackets are the same markers once folded.
    text = text.replace("\uff1c", "<").replace("\uff1e", ">") if _ROLE.search(fold(text)) else text
    return _ROLE.sub(FENCE, text)


def clamp(text: str, *, trim: bool) -> str:
    if len(text) <= VALUE_MAX:
        return text
    kept = text[: VALUE_MAX - len(MARKER)]
    return (kept.rstrip() if trim else kept) + MARKER


def upstream_key(raw: str) -> str:
    """validate_fact's key: sanitized, lower-cased, spaces to `_`, at most 64."""
    return sanitize(raw).lower().replace(" ", "_")[:KEY_MAX]


def our_key(raw: str) -> str:
    """KEY_PUNCTUATION: every run of non-word characters is one `_`, trimmed, at most 64."""
    key = re.sub(r"_+", "_", re.sub(r"[^\w]+", "_", sanitize(raw).lower())).strip("_")
    return key[:KEY_MAX].rstrip("_")


@dataclass(frozen=True)
class Candidate:
    key: str
    value: str
    category: str = "preference"


class Invalid(ValueError):
    """What upstream's validate_fact raises (ours raises FactInvalid, also a ValueError)."""


def validate_fact(
    key: str,
    value: str,
    category: str | None = None,
    *,
    ours: bool = False,
) -> Candidate:
    """Upstream's validate_fact; `ours` applies KEY_PUNCTUATION and TRUNCATION_TRIMS_SPACE."""
    clean_key = our_key(key) if ours else upstream_key(key)
    clean_value = clamp(remove_fences(sanitize(value)), trim=ours)
    if not clean_key or not any(char.isalnum() for char in clean_value):
        raise Invalid("empty once cleaned")
    cat = (category or "preference").strip().lower()
    if cat not in set(MemoryCategory):
        raise Invalid("unknown category")
    return Candidate(clean_key, clean_value, cat)


# --- the write filter (upstream's default rules, on the NFKC fold) -----------------------------

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2} ?(?:[A-Z0-9]{4} ?){2,7}[A-Z0-9]{1,4}\b")
_DATE_TIME = re.compile(
    r"(?<![\d./_-])(?:(\d+)([-/.])(\d+)\2(\d+)|(\d+):(\d+)(?::(\d+))?)(?![\d]|[-./_]\d)"
)


def _plausible(match: re.Match[str]) -> bool:
    """A calendar date with a four-digit year first or last, or a clock time."""
    if match.group(5) is not None:
        hour, minute, second = match.group(5), match.group(6), match.group(7) or "0"
        return (
            len(hour) <= 2
            and len(minute) == 2
            and int(hour) < 24
            and int(minute) < 60
            and (len(second) <= 2 and int(second) < 60)
        )
    first, middle, last = match.group(1), match.group(3), match.group(4)
    if len(first) == 4:
        year, month, day = first, middle, last
    elif len(last) == 4:
        year, month, day = last, middle, first
        if not 1 <= int(month) <= 12:  # month first (9/12/2026)
            month, day = day, month
    else:
        return False
    return (
        1900 <= int(year) <= 2099
        and len(month) <= 2
        and len(day) <= 2
        and 1 <= int(month) <= 12
        and 1 <= int(day) <= 31
    )


def _mask_dates(text: str) -> str:
    return _DATE_TIME.sub(lambda m: "#" if _plausible(m) else m.group(0), text)


_DASHES = "-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u30fc"


_JOINER = re.compile(r"(?<=\d)(?:[ ./_" + re.escape(_DASHES) + r"]| ?\( ?| ?\)[ .-]?)(?=\d)")
_NINE_DIGITS = re.compile(r"\d{9,}")


def write_filter_allows(key: str, value: str) -> bool:
    """False for e-mail addresses, IBANs and numbers of nine or more digits (cards, accounts,
    IDs, phones), in any NFKC-equivalent form; dates and times are not such numbers."""
    for text in (key, value):
        folded = _mask_dates(fold(text))
        joined = _JOINER.sub("", folded)  # the separators a number may be written with
        if _EMAIL.search(folded) or _IBAN.search(folded) or _NINE_DIGITS.search(joined):
            return False
    return True


# --- dedup (the extraction's duplicate check) ---------------------------------------------------

_TOKEN = re.compile(r"\w+")


def dedup_form(value: str) -> str:
    return " ".join(fold(value).lower().split())


def is_duplicate(held: dict[str, str], candidate: Candidate) -> bool:
    """Under a held key: the same value, folded and lower-cased (an update otherwise). Under a
    new key: a value containing or contained in a held one, or token-set Jaccard >= 0.6."""
    new = dedup_form(candidate.value)
    if candidate.key in held:
        return dedup_form(held[candidate.key]) == new
    tokens = set(_TOKEN.findall(new))
    for value in held.values():
        old = dedup_form(value)
        if new in old or old in new:
            return True
        others = set(_TOKEN.findall(old))
        if tokens and others and len(tokens & others) / len(tokens | others) >= 0.6:
            return True
    return False


# --- the stores ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    key: str
    value: str
    category: str
    tick: int  # the logical updated_at


@dataclass
class _Subject:
    facts: dict[str, Fact] = field(default_factory=dict)  # insertion order = first written
    generation: int = 0


class UpstreamStore:
    """InMemoryMemoryStore as documented: replace by key (an update keeps the fact's place),
    each fact of a batch stamped in turn (a later one is newer), delete by exact key (an empty
    key deletes nothing), clear bumps the generation even when empty."""

    def __init__(self) -> None:
        self.subjects: dict[str, _Subject] = {}
        self.clock = 0

    def _subject(self, subject_id: str) -> _Subject:
        return self.subjects.setdefault(subject_id, _Subject())

    def _stamp(self) -> int:
        self.clock += 1
        return self.clock

    def upsert_facts(self, subject_id: str, facts: Sequence[Candidate]) -> None:
        subject = self._subject(subject_id)
        for fact in facts:
            subject.facts[fact.key] = Fact(fact.key, fact.value, fact.category, self._stamp())

    def visible(self, subject_id: str) -> list[Fact]:
        return list(self._subject(subject_id).facts.values())

    def get_facts(self, subject_id: str) -> list[Fact]:
        return self.visible(subject_id)

    def search_facts(self, subject_id: str, query: str) -> list[Fact]:
        terms = query.lower().split()
        facts = self.visible(subject_id)
        if not terms:
            return facts
        return [
            f for f in facts if any(t in f"{f.key} {f.value} {f.category}".lower() for t in terms)
        ]

    def tier_one(self, subject_id: str, cap: int = TIER_ONE_CAP) -> list[Fact]:
        facts = self.visible(subject_id)
        constraints = [f for f in facts if f.category == MemoryCategory.CONSTRAINT]
        others = sorted(
            (f for f in facts if f.category != MemoryCategory.CONSTRAINT), key=lambda f: -f.tick
        )
        return constraints + others[: max(0, cap - len(constraints))]

    def delete_fact(self, subject_id: str, key: str) -> bool:
        if not key:
            return False
        return self._subject(subject_id).facts.pop(key, None) is not None

    def clear(self, subject_id: str) -> None:
        subject = self._subject(subject_id)
        subject.facts.clear()
        subject.generation += 1

    def purge_generation(self, subject_id: str) -> int:
        return self._subject(subject_id).generation


# SENSITIVE_HELD: the model's own short list; tests draw sensitive values only from words that
# our classifier knows as well.
SENSITIVE_WORDS = ("insulin", "wheelchair", "pregnant", "halal", "輪椅", "懷孕")
_SUBJECT_BAD = re.compile(r"[\s/]")


def subject_id_ok(subject_id: str) -> bool:
    return (
        0 < len(subject_id) <= 128
        and subject_id not in {".", ".."}
        and not _SUBJECT_BAD.search(subject_id)
        and sanitize(subject_id) == subject_id
    )


class ExpectedStore(UpstreamStore):
    """What DjangoMemoryStore and HttpMemoryStore must do: upstream plus DIVERGENCES."""

    def __init__(self) -> None:
        super().__init__()
        self.held: dict[str, dict[str, Fact]] = {}  # SENSITIVE_HELD: facts waiting for review

    def _check_subject(self, subject_id: str) -> None:
        if not subject_id_ok(subject_id):  # SUBJECT_ID_RULES
            raise ValueError("subject id")

    def upsert_facts(self, subject_id: str, facts: Sequence[Candidate]) -> None:
        self._check_subject(subject_id)
        cleaned = []
        for fact in facts:
            # STORE_VALIDATES + KEY_PUNCTUATION + LONG_VALUES + TRUNCATION_TRIMS_SPACE
            clean = validate_fact(fact.key, fact.value, fact.category, ours=True)
            # FILTER_ON_SERVER: on the raw key as sent as well as the stored one
            if not write_filter_allows(sanitize(fact.key), clean.value) or not (
                write_filter_allows(clean.key, clean.value)
            ):
                raise ValueError("blocked")
            cleaned.append(clean)
        subject = self._subject(subject_id)
        held = self.held.setdefault(subject_id, {})
        # A batch is one write: a repeated key keeps its first place, the last one's value, and
        # the stamp of its last position.
        last: dict[str, tuple[int, Candidate]] = {}
        for position, clean in enumerate(cleaned):
            last[clean.key] = (position, clean)
        base = self.clock
        self.clock += len(cleaned)
        for key in dict.fromkeys(c.key for c in cleaned):
            position, clean = last[key]
            current = subject.facts.get(key) or held.get(key)
            if current is not None and (current.value, current.category) == (
                clean.value,
                clean.category,
            ):
                continue  # RESTATED_KEEPS_DATE
            fact = Fact(key, clean.value, clean.category, base + position + 1)
            sensitive = any(w in f"{key} {clean.value}".lower() for w in SENSITIVE_WORDS)
            if key in held or sensitive:
                held[key] = fact  # SENSITIVE_HELD: a held fact stays held until reviewed
                subject.facts.pop(key, None)
            else:
                subject.facts[key] = fact  # a known key keeps its place

    def search_facts(self, subject_id: str, query: str) -> list[Fact]:
        self._check_subject(subject_id)
        return super().search_facts(subject_id, sanitize(query)[:QUERY_MAX].strip())  # QUERY_CUT

    def get_facts(self, subject_id: str) -> list[Fact]:
        self._check_subject(subject_id)
        return super().get_facts(subject_id)

    def tier_one(self, subject_id: str, cap: int = TIER_ONE_CAP) -> list[Fact]:
        self._check_subject(subject_id)
        return super().tier_one(subject_id, cap)

    def delete_fact(self, subject_id: str, key: str) -> bool:
        self._check_subject(subject_id)
        key = our_key(key)  # DELETE_NORMALISES_KEY
        held = self.held.setdefault(subject_id, {}).pop(key, None) if key else None
        return super().delete_fact(subject_id, key) or held is not None

    def clear(self, subject_id: str) -> None:
        self._check_subject(subject_id)
        self.held.pop(subject_id, None)
        super().clear(subject_id)

    def purge_generation(self, subject_id: str) -> int:
        self._check_subject(subject_id)
        return super().purge_generation(subject_id)


def same_facts(facts: Sequence[Fact]) -> list[tuple[str, str, str]]:
    """What is compared: key, value and category, in order (SERVER_STAMPS_TIME)."""
    return [(f.key, f.value, str(f.category)) for f in facts]


def with_category(fact: Fact, category: str) -> Fact:
    return replace(fact, category=category)
