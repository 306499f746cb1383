"""Extraction quality benchmark: does the real prompt, on the real model, store what it should?

Runs every labelled conversation in bench/data/extraction_eval.jsonl (the gold set) through
`memoryadmin.extraction.runtime.propose_facts` (one Messages call each, no database) and
compares the facts it would keep with the hand-written labels. A stored fact counts as an
expected fact when any of that fact's `match_any` keywords occurs in its lower-cased value;
each stored fact can satisfy at most one expected fact and vice versa. Precision and recall are
reported overall, per language, per rule and per rule and language.

Every conversation carries the rule it tests, from the seed article's memory rules: `keep`
(a durable fact the traveller stated), `update` (a held fact changed: same key, new value), and
three kinds of "do not keep": `one_off` (this trip's errand), `query_result` (what a lookup or
the agent returned) and `inference` (the model's own guess). A sixth label, `sensitive`, marks
identity, card and contact details, which the app's write filter refuses whatever the rules say.

    python bench/extraction_eval.py [--limit N] [--model M] [--lang en|zh-Hant] [--verbose]

The gold set is checked first (ids, languages, rules, categories, keys as the app normalizes
them, held facts behind every update, every quote in its conversation, the quotas) and a table
of conversations per language and rule is printed; an inconsistent gold set exits 1. Then it
needs ANTHROPIC_API_KEY (ANTHROPIC_BASE_URL is honoured by the SDK). Without a key it says so
and exits 0, so `make`-style runs on machines without credentials stay green.

The check and the scoring functions are pure so tests/bench/test_extraction_eval_data.py can
test them without a model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_FILE = Path(__file__).resolve().parent / "data" / "extraction_eval.jsonl"
DEFAULT_MODEL = "claude-haiku-4-5-20251001"
LANGUAGES = ("en", "zh-Hant")
# The seed's rules: what to keep, how to update, and the three kinds of "do not keep".
RULES = ("keep", "update", "one_off", "query_result", "inference")
# Not a rule of the seed but of the app's write filter: identity, card and contact details.
SENSITIVE = "sensitive"
LABELS = (*RULES, SENSITIVE)
STORING_LABELS = frozenset({"keep", "update"})  # the others expect nothing to be stored
CATEGORIES = ("preference", "constraint", "context")  # memoryadmin.facts.choices.Category
MAX_EXPECTED = 3  # extraction keeps at most three new facts a turn (max_new_facts)
QUOTE_MAX_LENGTH = 200  # memoryadmin.facts.validation.EVIDENCE_MAX_LENGTH
# Quotas of the real gold set (issue 33): how big, how Chinese, how spread over the rules.
MIN_CONVERSATIONS = 150
MIN_SHARE = {"zh-Hant": Fraction(1, 3)}
MIN_PER_RULE_AND_LANGUAGE = 5
MIN_PER_RULE = 15
NO_KEY_MESSAGE = (
    "extraction_eval: ANTHROPIC_API_KEY is not set, so there is no model to measure; "
    "set it (and optionally ANTHROPIC_BASE_URL) to run the benchmark."
)


# --- The labelled data --------------------------------------------------------------------------


@dataclass(frozen=True)
class ExpectedFact:
    """A fact the extraction SHOULD store, recognised by keywords rather than exact wording."""

    key: str
    category: str
    match_any: tuple[str, ...]
    quote: str = ""  # the traveller's own words behind the fact, verbatim from a user message

    def matches(self, value: str) -> bool:
        lowered = value.lower()
        return any(word in lowered for word in self.match_any)


@dataclass(frozen=True)
class StoredFact:
    """What the extraction kept, reduced to what the scorer needs."""

    key: str
    value: str
    category: str = ""
    sensitive: bool = False
    is_update: bool = False


@dataclass(frozen=True)
class EvalCase:
    id: str
    lang: str
    rule: str
    held: tuple[dict[str, str], ...]
    messages: tuple[dict[str, str], ...]
    expected: tuple[ExpectedFact, ...]
    notes: str = ""


def parse_case(raw: dict[str, Any]) -> EvalCase:
    """One JSONL line to an EvalCase; KeyError/TypeError on a malformed line is deliberate."""
    return EvalCase(
        id=raw["id"],
        lang=raw["lang"],
        rule=raw["rule"],
        held=tuple(
            {"key": h["key"], "value": h["value"], "category": h["category"]} for h in raw["held"]
        ),
        messages=tuple({"role": m["role"], "text": m["text"]} for m in raw["messages"]),
        expected=tuple(
            ExpectedFact(
                key=e["key"],
                category=e["category"],
                match_any=tuple(e["match_any"]),
                quote=e.get("quote", ""),
            )
            for e in raw["expected"]
        ),
        notes=raw.get("notes", ""),
    )


def load_cases(path: Path = DATA_FILE) -> list[EvalCase]:
    with path.open(encoding="utf-8") as handle:
        return [parse_case(json.loads(line)) for line in handle if line.strip()]


# --- The gold set's own consistency (pure) ------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the gold set: which conversation ("" for the whole set), a short
    name tests and people can grep for, and the details."""

    case_id: str
    name: str
    detail: str

    def __str__(self) -> str:
        where = self.case_id or "(gold set)"
        return f"{where}: {self.name}: {self.detail}"


def read_rows(path: Path) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The JSONL lines as dicts; a line that is not a JSON object is a problem, not a crash."""
    rows: list[dict[str, Any]] = []
    problems: list[Problem] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(Problem(f"line {number}", "bad_json", str(exc)))
                continue
            if not isinstance(row, dict):
                problems.append(Problem(f"line {number}", "bad_json", "not a JSON object"))
                continue
            rows.append(row)
    return rows, problems


def _normalize_key(key: str) -> str:
    """The app's key normalization (memoryadmin_client.text, which validate_fact uses too)."""
    try:
        from memoryadmin_client.text import normalize_key
    except ImportError:  # run as a script from a checkout: the client lives in client/
        sys.path.insert(0, str(REPO_ROOT / "client"))
        from memoryadmin_client.text import normalize_key
    return normalize_key(key)


def _is_text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _check_key(case_id: str, where: str, key: object) -> list[Problem]:
    if not isinstance(key, str) or not key or _normalize_key(key) != key:
        normal = _normalize_key(key) if isinstance(key, str) else ""
        return [
            Problem(
                case_id,
                "bad_key",
                f"{where} key {key!r} is not as the app stores keys (would be {normal!r})",
            )
        ]
    return []


def _check_category(case_id: str, where: str, category: object) -> list[Problem]:
    if category not in CATEGORIES:
        return [Problem(case_id, "bad_category", f"{where} category {category!r}")]
    return []


def check_row(row: dict[str, Any]) -> list[Problem]:
    """Everything that can be wrong with one conversation on its own."""
    case_id = row.get("id") if isinstance(row.get("id"), str) else ""
    problems: list[Problem] = []
    if not case_id:
        problems.append(Problem("", "bad_id", f"missing or empty id in {str(row)[:60]!r}"))
    expected_fields = {"id", "lang", "rule", "held", "messages", "expected", "notes"}
    if set(row) != expected_fields:
        missing = sorted(expected_fields - set(row))
        unknown = sorted(set(row) - expected_fields)
        problems.append(Problem(case_id, "bad_fields", f"missing {missing}, unknown {unknown}"))
    if row.get("lang") not in LANGUAGES:
        problems.append(Problem(case_id, "bad_lang", f"lang {row.get('lang')!r}"))
    rule = row.get("rule")
    if rule not in LABELS:
        problems.append(Problem(case_id, "bad_rule", f"rule {rule!r}, not one of {LABELS}"))
    if not _is_text(row.get("notes")):
        problems.append(Problem(case_id, "no_notes", "say in notes why the label is what it is"))

    messages = row.get("messages")
    user_texts: list[str] = []
    if not isinstance(messages, list) or not messages:
        problems.append(Problem(case_id, "bad_messages", "no messages"))
        messages = []
    for number, message in enumerate(messages, start=1):
        if (
            not isinstance(message, dict)
            or set(message) != {"role", "text"}
            or message["role"] not in ("user", "assistant")
            or not _is_text(message["text"])
        ):
            problems.append(Problem(case_id, "bad_messages", f"message {number}: {message!r}"))
            continue
        if message["role"] == "user":
            user_texts.append(message["text"])
    if messages and isinstance(messages[0], dict) and messages[0].get("role") != "user":
        problems.append(Problem(case_id, "bad_messages", "the traveller speaks first"))

    held = row.get("held")
    held_keys: set[str] = set()
    if not isinstance(held, list):
        problems.append(Problem(case_id, "bad_held", "held must be a list"))
        held = []
    for fact in held:
        if not isinstance(fact, dict) or set(fact) != {"key", "value", "category"}:
            problems.append(Problem(case_id, "bad_held", f"held fact {fact!r}"))
            continue
        problems += _check_key(case_id, "held", fact["key"])
        problems += _check_category(case_id, "held", fact["category"])
        if not _is_text(fact["value"]):
            problems.append(Problem(case_id, "bad_held", f"held {fact['key']!r} has no value"))
        held_keys.add(fact["key"])

    expected = row.get("expected")
    if not isinstance(expected, list):
        problems.append(Problem(case_id, "bad_expected", "expected must be a list"))
        expected = []
    if len(expected) > MAX_EXPECTED:
        problems.append(
            Problem(case_id, "too_many_expected", f"{len(expected)} > {MAX_EXPECTED} a turn")
        )
    keys: list[str] = []
    for want in expected:
        if not isinstance(want, dict) or set(want) != {"key", "category", "match_any", "quote"}:
            problems.append(Problem(case_id, "bad_expected", f"expected fact {want!r}"))
            continue
        key = want["key"]
        keys.append(key)
        problems += _check_key(case_id, "expected", key)
        problems += _check_category(case_id, "expected", want["category"])
        words = want["match_any"]
        if (
            not isinstance(words, list)
            or not words
            or not all(_is_text(w) and w == w.lower() for w in words)
        ):
            problems.append(
                Problem(case_id, "bad_match_any", f"{key}: non-empty lower-case keywords only")
            )
            words = []
        quote = want["quote"]
        if not _is_text(quote):
            problems.append(Problem(case_id, "quote_missing", f"{key} has no quote"))
        elif not any(quote in text for text in user_texts):
            problems.append(
                Problem(
                    case_id,
                    "quote_not_in_conversation",
                    f"{key}: {quote!r} is not in any of the traveller's messages",
                )
            )
        elif len(quote) > QUOTE_MAX_LENGTH:
            problems.append(
                Problem(case_id, "quote_too_long", f"{key}: over {QUOTE_MAX_LENGTH} characters")
            )
        elif words and not any(word in quote.lower() for word in words):
            problems.append(
                Problem(
                    case_id,
                    "quote_without_keyword",
                    f"{key}: none of {words!r} occurs in the quote {quote!r}",
                )
            )
    if len(keys) != len(set(keys)):
        problems.append(Problem(case_id, "duplicate_expected_key", f"keys {keys}"))

    if rule == "keep":
        if not expected:
            problems.append(Problem(case_id, "keep_without_expected", "keep expects a fact"))
        reused = sorted(set(keys) & held_keys)
        if reused:
            problems.append(
                Problem(case_id, "keep_of_held_key", f"{reused} are held: label it update")
            )
    elif rule == "update":
        if not held_keys:
            problems.append(
                Problem(case_id, "update_without_held", "an update needs the held fact it changes")
            )
        elif not set(keys) & held_keys:
            problems.append(
                Problem(
                    case_id,
                    "update_without_held",
                    f"no expected key {keys} is held {sorted(held_keys)}: same key, new value",
                )
            )
    elif rule in LABELS and expected:
        problems.append(
            Problem(case_id, "dont_keep_with_expected", f"rule {rule} expects nothing stored")
        )
    return problems


def check_gold(rows: Sequence[dict[str, Any]], *, quotas: bool = True) -> list[Problem]:
    """Every problem of the gold set: each row's own, duplicate ids and (for the real file) the
    quotas. An empty list means consistent."""
    problems: list[Problem] = []
    for row in rows:
        problems += check_row(row)
    seen: set[str] = set()
    for row in rows:
        case_id = row.get("id")
        if isinstance(case_id, str) and case_id:
            if case_id in seen:
                problems.append(Problem(case_id, "duplicate_id", "the id is used twice"))
            seen.add(case_id)
    if quotas:
        problems += check_quotas(rows)
    return problems


def count_labels(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """Conversations per (language, rule)."""
    counts: dict[tuple[str, str], int] = {}
    for row in rows:
        cell = (str(row.get("lang")), str(row.get("rule")))
        counts[cell] = counts.get(cell, 0) + 1
    return counts


def check_quotas(rows: Sequence[dict[str, Any]]) -> list[Problem]:
    problems: list[Problem] = []
    total = len(rows)
    if total < MIN_CONVERSATIONS:
        problems.append(Problem("", "too_few_conversations", f"{total} < {MIN_CONVERSATIONS}"))
    counts = count_labels(rows)
    for lang, share in MIN_SHARE.items():
        have = sum(n for (row_lang, _), n in counts.items() if row_lang == lang)
        if have < total * share:
            problems.append(Problem("", f"too_few_{lang}", f"{have} of {total}, under {share}"))
    for rule in RULES:
        per_rule = sum(counts.get((lang, rule), 0) for lang in LANGUAGES)
        if per_rule < MIN_PER_RULE:
            problems.append(Problem("", "too_few_for_rule", f"{rule}: {per_rule} < {MIN_PER_RULE}"))
        for lang in LANGUAGES:
            have = counts.get((lang, rule), 0)
            if have < MIN_PER_RULE_AND_LANGUAGE:
                problems.append(
                    Problem(
                        "",
                        "too_few_for_rule",
                        f"{rule} in {lang}: {have} < {MIN_PER_RULE_AND_LANGUAGE}",
                    )
                )
    return problems


def format_label_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Conversations per language (rows) and rule (columns), with totals."""
    counts = count_labels(rows)
    langs = list(LANGUAGES) + sorted({lang for lang, _ in counts} - set(LANGUAGES))
    labels = list(LABELS) + sorted({rule for _, rule in counts} - set(LABELS))
    widths = [max(len(label), 4) for label in labels]
    lines = [
        "  "
        + f"{'':<8}"
        + "".join(f" {label:>{w}}" for label, w in zip(labels, widths, strict=True))
        + "  total"
    ]
    for lang in [*langs, "total"]:
        cells = [
            sum(
                n
                for (row_lang, rule), n in counts.items()
                if rule == label and lang in (row_lang, "total")
            )
            for label in labels
        ]
        total = sum(cells)
        lines.append(
            "  "
            + f"{lang:<8}"
            + "".join(f" {n:>{w}}" for n, w in zip(cells, widths, strict=True))
            + f"  {total:>5}"
        )
    return lines


# --- Scoring (pure) -----------------------------------------------------------------------------


def match_facts(
    stored: Sequence[StoredFact], expected: Sequence[ExpectedFact]
) -> list[tuple[int, int]]:
    """One-to-one pairs (stored index, expected index), as many as possible.

    A maximum bipartite matching rather than first-come greedy, so one broad stored value
    cannot "use up" an expected fact that only it could have matched while another stored
    value goes unpaired; lists are at most a handful long, so augmenting paths are cheap.
    """
    candidates = [
        [j for j, want in enumerate(expected) if want.matches(fact.value)] for fact in stored
    ]
    owner: dict[int, int] = {}  # expected index -> stored index

    def assign(i: int, seen: set[int]) -> bool:
        for j in candidates[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or assign(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(stored)):
        assign(i, set())
    return sorted((i, j) for j, i in owner.items())


@dataclass(frozen=True)
class CaseScore:
    case_id: str
    lang: str
    stored: tuple[StoredFact, ...]
    expected: tuple[ExpectedFact, ...]
    pairs: tuple[tuple[int, int], ...]
    rule: str = ""

    @property
    def matched(self) -> int:
        return len(self.pairs)

    @property
    def negative(self) -> bool:
        """A conversation labelled to store nothing."""
        return not self.expected

    @property
    def extra(self) -> list[StoredFact]:
        used = {i for i, _ in self.pairs}
        return [fact for i, fact in enumerate(self.stored) if i not in used]

    @property
    def missed(self) -> list[ExpectedFact]:
        used = {j for _, j in self.pairs}
        return [want for j, want in enumerate(self.expected) if j not in used]

    @property
    def perfect(self) -> bool:
        return not self.extra and not self.missed


def score_case(
    case_id: str,
    lang: str,
    stored: Sequence[StoredFact],
    expected: Sequence[ExpectedFact],
    rule: str = "",
) -> CaseScore:
    """One conversation scored. Every stored fact that pairs with no expected fact is a false
    positive of the conversation's rule: on a one_off, query_result or inference conversation
    (which expect nothing) anything stored is one."""
    return CaseScore(
        case_id=case_id,
        lang=lang,
        stored=tuple(stored),
        expected=tuple(expected),
        pairs=tuple(match_facts(stored, expected)),
        rule=rule,
    )


@dataclass(frozen=True)
class Totals:
    conversations: int = 0
    stored: int = 0
    expected: int = 0
    matched: int = 0
    negatives: int = 0
    negatives_with_store: int = 0

    @property
    def precision(self) -> float | None:
        """matched stored / stored; None when nothing was stored (undefined, not perfect)."""
        return self.matched / self.stored if self.stored else None

    @property
    def recall(self) -> float | None:
        """matched expected / expected; None when nothing was expected."""
        return self.matched / self.expected if self.expected else None


def summarize(scores: Iterable[CaseScore]) -> Totals:
    totals = Totals()
    for s in scores:
        totals = Totals(
            conversations=totals.conversations + 1,
            stored=totals.stored + len(s.stored),
            expected=totals.expected + len(s.expected),
            matched=totals.matched + s.matched,
            negatives=totals.negatives + int(s.negative),
            negatives_with_store=totals.negatives_with_store + int(s.negative and bool(s.stored)),
        )
    return totals


def _summarize_by(scores: Iterable[CaseScore], group: Callable[[CaseScore], Any]) -> dict:
    grouped: dict[Any, list[CaseScore]] = {}
    for score in scores:
        grouped.setdefault(group(score), []).append(score)
    return {name: summarize(members) for name, members in sorted(grouped.items())}


def summarize_by_language(scores: Iterable[CaseScore]) -> dict[str, Totals]:
    return _summarize_by(scores, lambda score: score.lang)


def _rule_order(rule: str) -> tuple[int, str]:
    return (LABELS.index(rule) if rule in LABELS else len(LABELS), rule)


def summarize_by_rule(scores: Iterable[CaseScore]) -> dict[str, Totals]:
    """Totals per rule, in the order of LABELS (keep, update, the don't-keeps, sensitive)."""
    totals = _summarize_by(scores, lambda score: score.rule)
    return {rule: totals[rule] for rule in sorted(totals, key=_rule_order)}


def summarize_by_rule_and_language(scores: Iterable[CaseScore]) -> dict[tuple[str, str], Totals]:
    totals = _summarize_by(scores, lambda score: (score.rule, score.lang))
    return {cell: totals[cell] for cell in sorted(totals, key=lambda c: (_rule_order(c[0]), c[1]))}


def format_ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def describe_misses(score: CaseScore) -> list[str]:
    """Human-readable lines for one imperfect conversation (empty when it scored perfectly)."""
    lines: list[str] = []
    for want in score.missed:
        lines.append(
            f"    missed   {want.key} ({want.category}) - none of {list(want.match_any)!r}"
        )
    for fact in score.extra:
        flags = "".join(
            [" [update]" if fact.is_update else "", " [sensitive]" if fact.sensitive else ""]
        )
        label = "stored on a negative" if score.negative else "unexpected"
        lines.append(f"    {label}: {fact.key} = {fact.value!r} ({fact.category}){flags}")
    return lines


def format_totals(name: str, totals: Totals) -> str:
    return (
        f"{name:<20} conversations {totals.conversations:>3}  "
        f"precision {format_ratio(totals.precision):>6} ({totals.matched}/{totals.stored})  "
        f"recall {format_ratio(totals.recall):>6} ({totals.matched}/{totals.expected})  "
        f"negatives that stored something {totals.negatives_with_store}/{totals.negatives}"
    )


# --- Running against the model ------------------------------------------------------------------


@dataclass
class RunStats:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    errors: list[str] = field(default_factory=list)


def _load_runtime() -> tuple[Callable[..., Any], type]:
    """Import B's runtime, setting Django up only if the import chain needs the app registry
    (it reaches facts.models through validation); no database connection is ever opened."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from django.core.exceptions import AppRegistryNotReady, ImproperlyConfigured

    try:
        from memoryadmin.extraction.runtime import HeldFact, propose_facts
    except (AppRegistryNotReady, ImproperlyConfigured):
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
        django.setup()
        from memoryadmin.extraction.runtime import HeldFact, propose_facts
    return propose_facts, HeldFact


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="run only the first N cases")
    parser.add_argument("--model", default=DEFAULT_MODEL, help=f"default {DEFAULT_MODEL}")
    parser.add_argument("--lang", choices=LANGUAGES, default=None, help="one language only")
    parser.add_argument(
        "--data",
        type=Path,
        default=DATA_FILE,
        help="labelled JSONL file (the quotas are checked only on the default one)",
    )
    parser.add_argument(
        "--verbose", action="store_true", help="print every conversation, not only the misses"
    )
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rows, problems = read_rows(args.data)
    problems += check_gold(rows, quotas=args.data.resolve() == DATA_FILE.resolve())
    print(f"extraction_eval: gold set {args.data.name}, {len(rows)} conversations")
    for line in format_label_table(rows):
        print(line)
    if problems:
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        print(
            f"extraction_eval: the gold set is inconsistent ({len(problems)} problems).",
            file=sys.stderr,
        )
        return 1
    print("extraction_eval: the gold set is consistent.")
    if not os.environ.get("ANTHROPIC_API_KEY"):
        print(NO_KEY_MESSAGE)
        return 0

    cases = [parse_case(row) for row in rows]
    if args.lang:
        cases = [case for case in cases if case.lang == args.lang]
    cases = cases[: args.limit]

    import anthropic

    propose_facts, held_fact = _load_runtime()
    client = anthropic.Anthropic()
    stats = RunStats()
    scores: list[CaseScore] = []
    started = time.monotonic()
    print(f"extraction_eval: {len(cases)} conversations, model {args.model}")

    for case in cases:
        try:
            proposal = propose_facts(
                client=client,
                model=args.model,
                messages=[dict(m) for m in case.messages],
                held=[held_fact(**h) for h in case.held],
            )
        except (
            anthropic.AuthenticationError,
            anthropic.PermissionDeniedError,
            anthropic.NotFoundError,
            anthropic.BadRequestError,
        ) as exc:
            # Every further call would fail the same way: stop instead of burning requests.
            print(
                f"extraction_eval: the API refused the request ({exc.__class__.__name__}); "
                f"check the key, base URL and --model. Stopping.",
                file=sys.stderr,
            )
            return 2
        except anthropic.APIError as exc:
            # Transient (rate limit, overload, network) after the SDK's own retries: the
            # conversation is reported and left out of the figures rather than scored as empty.
            stats.errors.append(case.id)
            print(f"ERROR {case.id}: {exc.__class__.__name__}")
            continue
        stats.calls += 1
        stats.input_tokens += proposal.input_tokens
        stats.output_tokens += proposal.output_tokens
        stored = [
            StoredFact(
                key=fact.key,
                value=fact.value,
                category=str(fact.category),
                sensitive=bool(fact.sensitive),
                is_update=bool(fact.is_update),
            )
            for fact in proposal.kept
        ]
        score = score_case(case.id, case.lang, stored, case.expected, rule=case.rule)
        scores.append(score)
        if args.verbose or not score.perfect:
            status = "ok  " if score.perfect else "MISS"
            print(
                f"{status} {case.id} [{case.lang}, {case.rule}] matched {score.matched}/"
                f"{len(score.expected)} expected, stored {len(score.stored)}"
            )
            for line in describe_misses(score):
                print(line)
            if args.verbose:
                for i, j in score.pairs:
                    fact = score.stored[i]
                    print(f"    matched  {score.expected[j].key}: {fact.key} = {fact.value!r}")

    elapsed = time.monotonic() - started
    print()
    print(format_totals("overall", summarize(scores)))
    for lang, totals in summarize_by_language(scores).items():
        print(format_totals(lang, totals))
    for rule, totals in summarize_by_rule(scores).items():
        print(format_totals(f"rule {rule}", totals))
    for (rule, lang), totals in summarize_by_rule_and_language(scores).items():
        print(format_totals(f"rule {rule} {lang}", totals))
    print(
        f"tokens   input {stats.input_tokens}  output {stats.output_tokens}  "
        f"calls {stats.calls}  errors {len(stats.errors)}  {elapsed:.1f}s"
    )
    if cases and not scores:
        print("extraction_eval: no conversation could be scored.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
