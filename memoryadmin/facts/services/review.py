"""A reviewer's decision on a held fact, with the look at its value that the decision needed."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from ..actors import Actor
from ..errors import FactInvalid, FactStateError
from ..models import EventAction, MemoryFact
from ..selectors import fact_revealed_since
from ..validation import clean_reason
from .changes import fact_approve
from .commit import record_event
from .forgetting import fact_reject
from .history import load_for_update

DECISIONS = ("approve", "reject")
# How long a reveal lets its reviewer decide (the staff pages show the value as long).
REVEAL_WINDOW = timedelta(minutes=10)


def _revealed_to(actor: Actor, fact: MemoryFact) -> bool:
    if actor.user is None or not actor.user.pk:
        return False
    since = max(fact.updated_at, timezone.now() - REVEAL_WINDOW)
    return fact_revealed_since(fact.subject_id, fact.key, user_id=actor.user.pk, since=since)


def _require_seen(actor: Actor, fact: MemoryFact, refusal: str) -> None:
    """Nobody decides on, or marks, a sensitive value unseen (`FactStateError(refusal)`)."""
    if fact.sensitive and not _revealed_to(actor, fact):
        raise FactStateError(refusal)


@transaction.atomic
def fact_review_decide(
    *,
    subject_id: str,
    key: str,
    decision: str,
    actor: Actor,
    reason: str,
    expected_version: int | None = None,
) -> None:
    """Approve or reject. Nobody decides on a value unseen: a sensitive value is masked in the
    queue, and its decision is accepted only from a reviewer who revealed it (`fact_reveal`,
    one access event with its reason) within the last REVEAL_WINDOW, after its last change."""
    if decision not in DECISIONS:
        raise FactInvalid("Choose approve or reject.", fields={"decision": "Choose one."})
    if not clean_reason(reason).strip():
        raise FactInvalid("Give a reason.", fields={"reason": "Required."})
    fact = load_for_update(subject_id, key, expected_version)
    _require_seen(
        actor,
        fact,
        "Reveal the value before you decide: a sensitive fact is approved or rejected "
        "only by someone who has seen it. Reveal it (one click, with a reason), then decide.",
    )
    decide = fact_approve if decision == "approve" else fact_reject
    decide(
        subject_id=subject_id,
        key=key,
        actor=actor,
        reason=reason,
        expected_version=expected_version,
    )


@transaction.atomic
def fact_quality_mark(*, subject_id: str, key: str, actor: Actor, words: str) -> MemoryFact:
    """A reviewer's quality mark on a sampled fact, in its history as a
    `quality_marked` event whose reason is the mark in words; the value is untouched and not
    copied. As for a review decision, a sensitive value is marked only by someone who revealed
    it within the last REVEAL_WINDOW, after its last change (`FactStateError` otherwise)."""
    if not clean_reason(words).strip():
        raise FactInvalid("Say what the mark is.", fields={"mark": "Required."})
    fact = load_for_update(subject_id, key, None)
    _require_seen(
        actor,
        fact,
        "Reveal the value before you mark it: a sensitive fact is marked only by someone "
        "who has seen it. Reveal it (one click, with a reason), then mark it.",
    )
    record_event(
        subject_id=fact.subject_id,
        key=fact.key,
        action=EventAction.QUALITY_MARKED,
        actor=actor,
        reason=words,
    )
    return fact
