"""Extraction quality benchmark: does the real prompt, on the real model, store what it should?

Runs every labelled conversation in bench/data/extraction_eval.jsonl through
`memoryadmin.extraction.runtime.propose_facts` (one Messages call each, no database) and
compares the facts it would keep with the hand-written labels. A stored fact counts as an
expected fact when any of that fact's `match_any` keywords occurs in its lower-cased value;
each stored fact can satisfy at most one expected fact and vice versa.

    python bench/extraction_eval.py [--limit N] [--model M] [--lang en|zh-Hant] [--verbose]

Needs ANTHROPIC_API_KEY (ANTHROPIC_BASE_URL is honoured by the SDK). Without a key it says so
and exits 0, so `make`-style runs on machines without credentials stay green.

The scoring functions are pure so tests/bench/test_extraction_eval_data.py can check them
without a model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_FILE = Path(__file__).resolve().parent / "data" / "extraction_eval.jsonl"
DEFAULT_MODEL = "claude-haiku-4-5-20251001"
LANGUAGES = ("en", "zh-Hant")
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
    held: tuple[dict[str, str], ...]
    messages: tuple[dict[str, str], ...]
    expected: tuple[ExpectedFact, ...]
    notes: str = ""


def parse_case(raw: dict[str, Any]) -> EvalCase:
    """One JSONL line to an EvalCase; KeyError/TypeError on a malformed line is deliberate."""
    return EvalCase(
        id=raw["id"],
        lang=raw["lang"],
        held=tuple(
            {"key": h["key"], "value": h["value"], "category": h["category"]} for h in raw["held"]
        ),
        messages=tuple({"role": m["role"], "text": m["text"]} for m in raw["messages"]),
        expected=tuple(
            ExpectedFact(key=e["key"], category=e["category"], match_any=tuple(e["match_any"]))
            for e in raw["expected"]
        ),
        notes=raw.get("notes", ""),
    )


def load_cases(path: Path = DATA_FILE) -> list[EvalCase]:
    with path.open(encoding="utf-8") as handle:
        return [parse_case(json.loads(line)) for line in handle if line.strip()]


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
    case_id: str, lang: str, stored: Sequence[StoredFact], expected: Sequence[ExpectedFact]
) -> CaseScore:
    return CaseScore(
        case_id=case_id,
        lang=lang,
        stored=tuple(stored),
        expected=tuple(expected),
        pairs=tuple(match_facts(stored, expected)),
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


def summarize_by_language(scores: Iterable[CaseScore]) -> dict[str, Totals]:
    grouped: dict[str, list[CaseScore]] = {}
    for s in scores:
        grouped.setdefault(s.lang, []).append(s)
    return {lang: summarize(group) for lang, group in sorted(grouped.items())}


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
        f"{name:<8} conversations {totals.conversations:>3}  "
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
    parser.add_argument("--data", type=Path, default=DATA_FILE, help="labelled JSONL file")
    parser.add_argument(
        "--verbose", action="store_true", help="print every conversation, not only the misses"
    )
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not os.environ.get("ANTHROPIC_API_KEY"):
        print(NO_KEY_MESSAGE)
        return 0

    cases = load_cases(args.data)
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
        score = score_case(case.id, case.lang, stored, case.expected)
        scores.append(score)
        if args.verbose or not score.perfect:
            status = "ok  " if score.perfect else "MISS"
            print(
                f"{status} {case.id} [{case.lang}] matched {score.matched}/"
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
