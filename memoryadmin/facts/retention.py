"""Retention rules: which rule governs a fact, its expiry computed in Python (one fact being
written) and in SQL (recomputing or previewing a change over every fact), and the checks that
keep a rule set unambiguous: a proposed rule's (`check_rule`, which the policy services and the
settings pages both call) and the rule set it would make (`rules_after`, for the preview).

A rule matches by category (or any), an optional key glob (`*` any run, `?` one character) and
sensitive or not (or either). Precedence: a key glob outranks a category, which outranks a
sensitivity condition. Two enabled rules of the same precedence that can match one fact would
tie; they are refused on save, so the winner never depends on an arbitrary tie-break. (For rule
sets stored before that check, the shorter TTL wins, then the older rule, in Python and SQL alike.)
A TTL of None means "keep until deleted".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Protocol

from django.core.exceptions import ValidationError
from django.db.models import Case, Count, DateTimeField, F, Q, QuerySet, Value, When
from django.db.models.expressions import Expression
from django.utils import timezone

from .models import KEY_MAX_LENGTH, Category, MemoryFact, RetentionRule, RetentionRun
from .validation import sanitize_text

GLOB_CHARS = re.compile(r"^[\w*?]+$")


class RuleLike(Protocol):
    pk: int | None
    category: str
    key_glob: str
    sensitive: bool | None
    ttl_days: int | None


def precedence(rule: RuleLike) -> int:
    return (
        (4 if rule.key_glob else 0)
        + (2 if rule.category else 0)
        + (1 if rule.sensitive is not None else 0)
    )


def ordered(rules: Iterable[RuleLike]) -> list[RuleLike]:
    """Strongest first: precedence, then the shorter TTL (keep-until-deleted last), then the
    older rule (an unsaved one last)."""
    return sorted(
        rules,
        key=lambda r: (
            -precedence(r),
            r.ttl_days if r.ttl_days is not None else float("inf"),
            r.pk if r.pk is not None else float("inf"),
        ),
    )


def glob_matches(glob: str, key: str) -> bool:
    return bool(_glob_regex(glob).match(key))


@lru_cache(maxsize=256)
def _glob_regex(glob: str) -> re.Pattern[str]:
    return re.compile(glob_to_regex(glob))


def glob_to_regex(glob: str) -> str:
    """`meal_*` -> `^meal_.*$`; valid in Python and in PostgreSQL's `~` alike."""
    return (
        "^"
        + "".join(".*" if char == "*" else "." if char == "?" else re.escape(char) for char in glob)
        + "$"
    )


def rule_matches(rule: RuleLike, *, key: str, category: str, sensitive: bool) -> bool:
    return (
        (not rule.category or rule.category == category)
        and (not rule.key_glob or glob_matches(rule.key_glob, key))
        and (rule.sensitive is None or rule.sensitive == sensitive)
    )


def winning_rule(
    rules: Iterable[RuleLike], *, key: str, category: str, sensitive: bool
) -> RuleLike | None:
    for rule in ordered(rules):
        if rule_matches(rule, key=key, category=category, sensitive=sensitive):
            return rule
    return None


def expiry_for(rule: RuleLike | None, updated_at: datetime) -> datetime | None:
    if rule is None or rule.ttl_days is None:
        return None
    return updated_at + timedelta(days=rule.ttl_days)


# --- ties --------------------------------------------------------------------------------------


def globs_overlap(first: str, second: str) -> bool:
    """Can one key match both globs? Walks both patterns together (a product automaton)."""
    seen: set[tuple[int, int]] = set()
    stack = [(0, 0)]
    while stack:
        i, j = stack.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(first) and j == len(second):
            return True
        a = first[i] if i < len(first) else None
        b = second[j] if j < len(second) else None
        if a == "*":
            stack.append((i + 1, j))
        if b == "*":
            stack.append((i, j + 1))
        if a is None or b is None:
            continue
        if a == "*" and b == "*":
            continue  # consuming with both stars loops back to (i, j)
        if a in "*?" or b in "*?" or a == b:
            stack.append((i if a == "*" else i + 1, j if b == "*" else j + 1))
    return False


def would_tie(first: RuleLike, second: RuleLike) -> bool:
    """Same precedence and some fact could match both: the winner would be arbitrary."""
    if precedence(first) != precedence(second):
        return False
    if first.category != second.category or first.sensitive != second.sensitive:
        return False
    if first.key_glob and second.key_glob:
        return globs_overlap(first.key_glob, second.key_glob)
    return True


def find_tie(rule: RuleLike, others: Iterable[RuleLike]) -> RuleLike | None:
    for other in others:
        if other.pk is not None and other.pk == rule.pk:
            continue
        if would_tie(rule, other):
            return other
    return None


# --- SQL ---------------------------------------------------------------------------------------


def _match_q(rule: RuleLike) -> Q:
    q = Q()
    if rule.category:
        q &= Q(category=rule.category)
    if rule.key_glob:
        q &= Q(key__regex=glob_to_regex(rule.key_glob))
    if rule.sensitive is not None:
        q &= Q(sensitive=rule.sensitive)
    return q


def _expiry_value(rule: RuleLike) -> Expression:
    if rule.ttl_days is None:
        return Value(None, output_field=DateTimeField())
    return F("updated_at") + Value(timedelta(days=rule.ttl_days))


def expiry_expression(rules: Sequence[RuleLike]) -> Expression:
    """`expires_at` as the rules give it, for every row at once: one CASE, strongest rule first
    (a rule that matches everything is the default, and nothing after it can win)."""
    whens = []
    default: Expression = Value(None, output_field=DateTimeField())
    for rule in ordered(rules):
        condition = _match_q(rule)
        if not condition:
            default = _expiry_value(rule)
            break
        whens.append(When(condition, then=_expiry_value(rule)))
    if not whens:
        return default
    return Case(*whens, default=default, output_field=DateTimeField())


def governed_facts() -> QuerySet[MemoryFact]:
    """The facts rules decide: not pinned by a person, not under legal hold."""
    return MemoryFact.objects.filter(expiry_pinned=False, subject__legal_hold=False)


@dataclass(frozen=True)
class Preview:
    """What replacing the rule set would do to facts now, as the page words it."""

    expire_now: int
    shorten: int
    lengthen: int
    governed: int

    @property
    def unchanged(self) -> int:
        return self.governed - self.expire_now - self.shorten - self.lengthen


def preview(rules: Sequence[RuleLike], *, now: datetime | None = None) -> Preview:
    """One aggregate query comparing each governed fact's stored expiry with the one `rules`
    would give it. The recompute then writes exactly those expiries."""
    now = now or timezone.now()
    old_live = Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    counts = (
        governed_facts()
        .annotate(new_expiry=expiry_expression(rules))
        .aggregate(
            governed=Count("pk"),
            expire_now=Count("pk", filter=Q(new_expiry__lte=now) & old_live),
            shorten=Count(
                "pk",
                filter=Q(new_expiry__gt=now)
                & (Q(expires_at__isnull=True) | Q(new_expiry__lt=F("expires_at"))),
            ),
            lengthen=Count(
                "pk",
                filter=Q(expires_at__isnull=False)
                & (Q(new_expiry__isnull=True) | Q(new_expiry__gt=F("expires_at"))),
            ),
        )
    )
    return Preview(**counts)


# --- the winner table --------------------------------------------------------------------------


@dataclass(frozen=True)
class WinnerRow:
    category: str
    category_label: str
    sensitive: bool
    rule: RuleLike | None
    key_rules: list[RuleLike]


def winner_table(rules: Sequence[RuleLike]) -> list[WinnerRow]:
    """For each category x sensitivity: the rule for keys no glob names, and the glob rules
    that take over for the keys they match (strongest first)."""
    rows = []
    for category, label in Category.choices:
        for sensitive in (False, True):
            applicable = [
                rule
                for rule in ordered(rules)
                if (not rule.category or rule.category == category)
                and (rule.sensitive is None or rule.sensitive == sensitive)
            ]
            default = next((rule for rule in applicable if not rule.key_glob), None)
            rows.append(
                WinnerRow(
                    category=category,
                    category_label=label,
                    sensitive=sensitive,
                    rule=default,
                    key_rules=[rule for rule in applicable if rule.key_glob],
                )
            )
    return rows


@dataclass(frozen=True)
class SensitiveOverride:
    """A rule that wins for some sensitive facts and keeps them longer than the rule for
    sensitive facts would."""

    category_label: str
    rule: RuleLike
    sensitive_rule: RuleLike


def sensitive_overrides(rules: Sequence[RuleLike]) -> list[SensitiveOverride]:
    """Where a more specific rule (a category, a key pattern) outranks the sensitive-facts rule
    (sensitive only, any category, any key) and keeps sensitive facts longer than it: the
    precedence is right in general, but here it undoes a privacy promise, so pages say so."""
    base = next(
        (r for r in ordered(rules) if r.sensitive is True and not r.category and not r.key_glob),
        None,
    )
    if base is None or base.ttl_days is None:
        return []
    found = []
    for row in winner_table(rules):
        if not row.sensitive:
            continue
        for rule in (row.rule, *row.key_rules):
            if rule is None or rule is base:
                continue
            if rule.ttl_days is None or rule.ttl_days > base.ttl_days:
                found.append(SensitiveOverride(row.category_label, rule, base))
    return found


def enabled_rules() -> list[RetentionRule]:
    return list(RetentionRule.objects.filter(enabled=True))


def retention_rules() -> list[RetentionRule]:
    """Every rule, strongest first (the order in which they are tried)."""
    return ordered(RetentionRule.objects.all())  # type: ignore[return-value]


def retention_run_latest() -> RetentionRun | None:
    return RetentionRun.objects.select_related("policy_event__actor_user").order_by("-id").first()


def retention_run_get(run_id: int) -> RetentionRun | None:
    return RetentionRun.objects.filter(pk=run_id).first()


# --- a proposed rule: its checks, and the rule set it would make ----------------------------


@dataclass(frozen=True)
class RuleProposal:
    """A rule as a form hands it in; `pk` set when editing."""

    name: str
    category: str
    key_glob: str
    sensitive: bool | None
    ttl_days: int | None
    pk: int | None = None


def _clean_rule(proposal: RuleProposal) -> RuleProposal:
    errors: dict[str, list[str]] = {}
    name = sanitize_text(proposal.name or "")
    if not name or len(name) > 100:
        errors["name"] = ["Give the rule a short name (at most 100 characters)."]
    if proposal.category not in ("", *Category.values):
        errors["category"] = ["Choose a category or any."]
    glob = (proposal.key_glob or "").strip().lower()
    if glob and (len(glob) > KEY_MAX_LENGTH or not GLOB_CHARS.match(glob)):
        errors["key_glob"] = [
            "Use letters, digits and _ with * for any run of characters and ? for one, e.g. meal_*."
        ]
    if proposal.ttl_days is not None and not 1 <= proposal.ttl_days <= 36500:
        errors["ttl_days"] = ["Enter a number of days from 1 to 36500, or keep until deleted."]
    if errors:
        raise ValidationError(errors)
    return RuleProposal(
        name=name,
        category=proposal.category,
        key_glob=glob,
        sensitive=proposal.sensitive,
        ttl_days=proposal.ttl_days,
        pk=proposal.pk,
    )


def _as_rule(proposal: RuleProposal) -> RetentionRule:
    return RetentionRule(
        pk=proposal.pk,
        name=proposal.name,
        category=proposal.category,
        key_glob=proposal.key_glob,
        sensitive=proposal.sensitive,
        ttl_days=proposal.ttl_days,
    )


def rules_after(
    *, proposal: RuleProposal | None = None, delete_pk: int | None = None
) -> list[RetentionRule]:
    """The enabled rule set as it would be after saving `proposal` or deleting a rule."""
    rules = [
        rule
        for rule in enabled_rules()
        if rule.pk != delete_pk and (proposal is None or rule.pk != proposal.pk)
    ]
    if proposal is not None:
        rules.append(_as_rule(proposal))
    return rules


def check_rule(proposal: RuleProposal) -> RuleProposal:
    """Validate a proposal and refuse one that would tie with an existing rule."""
    clean = _clean_rule(proposal)
    others = [rule for rule in enabled_rules() if rule.pk != clean.pk]
    tie = find_tie(_as_rule(clean), others)
    if tie is not None:
        raise ValidationError(
            {
                "__all__": [
                    f"This rule would tie with “{tie.name}”: both match the same facts with "
                    "the same precedence, so neither would clearly win. Narrow one of them "
                    "(a category, a key pattern or sensitivity) or change that rule instead."
                ]
            }
        )
    return clean
