"""A person's change to one fact, shared by the services of this package (not exported:
callers use the services): the traveller's lock, load-lock-compare (the If-Match), and the
change made through the write plan (`plan.py`) and its commit (`commit.py`), as the upsert's."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.utils import timezone

from memoryadmin import db

from .. import retention
from ..actors import Actor
from ..errors import FactConflict, FactNotFound
from ..models import (
    EventAction,
    MemoryFact,
    RetentionRule,
    Subject,
)
from ..validation import CleanFact, clean_subject_id, normalize_key
from .commit import UPDATE_COLUMNS, plan_commit
from .plan import FACT_COLUMNS, Row, change_plan, next_version, restate

_ROW_COLUMNS = (*FACT_COLUMNS, "changed_at", "rewritten_by", "rewritten_by_label")


def lock_subject(subject_id: str) -> Subject:
    """Create the subject if needed and lock its row for the rest of the transaction. Every
    write that locks a traveller records, at commit, its position for read-your-writes."""
    db.written(subject_id)
    subject = Subject.objects.select_for_update().filter(subject_id=subject_id).first()
    if subject is None:
        # ON CONFLICT DO NOTHING waits for a concurrent creator instead of failing.
        Subject.objects.bulk_create([Subject(subject_id=subject_id)], ignore_conflicts=True)
        subject = Subject.objects.select_for_update().get(subject_id=subject_id)
    return subject


def matching_rule(
    rules: Iterable[RetentionRule], *, key: str, category: str, sensitive: bool
) -> RetentionRule | None:
    """The rule that governs a fact (see facts.retention for the precedence)."""
    return retention.winning_rule(rules, key=key, category=category, sensitive=sensitive)


def load_for_update(subject_id: str, key: str, expected_version: int | None) -> MemoryFact:
    """Lock the traveller, read the fact; a stale `expected_version` (If-Match) raises."""
    clean_subject_id(subject_id)
    lock_subject(subject_id)
    fact = MemoryFact.objects.filter(subject_id=subject_id, key=normalize_key(key)).first()
    if fact is None:
        raise FactNotFound("No such fact.")
    if expected_version is not None and fact.version != expected_version:
        raise FactConflict(
            "The fact was changed by someone else since you loaded it; reload and try again.",
            current_version=fact.version,
        )
    return fact


def fact_row(fact: MemoryFact) -> Row:
    """A loaded fact as the plan reads it."""
    return {name: getattr(fact, name) for name in _ROW_COLUMNS}


def commit_change(
    fact: MemoryFact,
    *,
    action: EventAction,
    actor: Actor,
    reason: str,
    clean: CleanFact | None = None,
    rules: Iterable[RetentionRule] | None = None,
    **changes: Any,
) -> MemoryFact:
    """A person's change to one loaded fact, through the write plan and its commit: new words
    (`clean`, see `plan.restate`) and/or other `changes` make the next version, its expiry
    recomputed under `rules` when given, written with its event; `fact` is updated to match."""
    now = timezone.now()
    row = fact_row(fact)
    new = restate(row, clean, actor=actor, at=now) if clean else next_version(row, at=now)
    new.update(changes)
    plan = change_plan(row, new, action=action, rules=rules)
    plan_commit(plan, subject_id=fact.subject_id, actor=actor, reason=reason, now=now)
    for name in UPDATE_COLUMNS:
        setattr(fact, name, new[name])
    return fact
