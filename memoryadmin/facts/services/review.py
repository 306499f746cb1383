"""A reviewer's decision on a held fact, with the look at its value that the decision needed."""

from __future__ import annotations

from django.db import transaction

from ..actors import Actor
from ..errors import FactInvalid
from ..validation import clean_reason
from .changes import fact_approve, fact_reveal
from .forgetting import fact_reject
from .history import load_for_update

DECISIONS = ("approve", "reject")


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
    """Approve or reject. A sensitive value is shown to the reviewer in the queue (nobody may
    decide on a value unseen), so its decision also records that access, as a reveal would:
    one reason for both, one transaction, the access event first."""
    if decision not in DECISIONS:
        raise FactInvalid("Choose approve or reject.", fields={"decision": "Choose one."})
    if not clean_reason(reason).strip():
        raise FactInvalid("Give a reason.", fields={"reason": "Required."})
    fact = load_for_update(subject_id, key, expected_version)
    if fact.sensitive:
        fact_reveal(subject_id=subject_id, key=key, actor=actor, reason=reason)
    decide = fact_approve if decision == "approve" else fact_reject
    decide(
        subject_id=subject_id,
        key=key,
        actor=actor,
        reason=reason,
        expected_version=expected_version,
    )
