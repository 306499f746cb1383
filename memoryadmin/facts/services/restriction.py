"""Stop the use of one fact while its accuracy is checked, and resume it (GDPR Art. 18(1)(a)).

A restricted fact is kept as it is: its value, version and history do not change, only
`restricted_at`, `restricted_by` and `restriction_note` do. Every agent read leaves it out
(`facts/sql.py`), and the agent's upsert, extraction and the import leave its value alone
(`plan.upsert_plan`). It resumes in one of three ways (`OUTCOMES`): a person corrects the
value (`fact_edit` lifts it: "corrected"), staff confirm it is right ("confirmed"), or the
traveller lifts it themselves ("lifted"). Each step is a FactEvent in the fact's history (the
traveller's note in `after`, which erasure blanks, never in `reason`, which it keeps), and the
restriction listeners (`facts.corrections`) are told in the same transaction.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from ..actors import Actor
from ..choices import ActorKind, EventAction
from ..corrections import RestrictionChanged, notify_restriction
from ..errors import FactInvalid, FactStateError
from ..models import MemoryFact
from ..validation import clean_reason
from .commit import record_event
from .history import load_for_update

CORRECTED, CONFIRMED, LIFTED = "corrected", "confirmed", "lifted"
OUTCOMES = (CORRECTED, CONFIRMED, LIFTED)
_PEOPLE = (ActorKind.STAFF, ActorKind.CUSTOMER)


@transaction.atomic
def fact_restrict(
    *, subject_id: str, key: str, actor: Actor, reason: str, note: str = ""
) -> MemoryFact:
    """Stop the use of one fact: the traveller (portal) or staff (a request by phone, with a
    reason). `note` is what the traveller says is wrong, their own words: cleaned, at most
    500 characters, shown escaped, never logged. A fact already restricted raises."""
    if actor.kind not in _PEOPLE:
        raise FactStateError("Only the traveller or staff can stop the use of a fact.")
    fact = load_for_update(subject_id, key, None)
    if fact.restricted_at is not None:
        raise FactStateError("The use of this fact is already stopped.")
    note = clean_reason(note).strip()
    fact.restricted_at = timezone.now()
    fact.restricted_by = str(actor.kind)
    fact.restriction_note = note
    fact.save(update_fields=["restricted_at", "restricted_by", "restriction_note"])
    record_event(
        subject_id=fact.subject_id,
        key=fact.key,
        action=EventAction.RESTRICTED,
        actor=actor,
        reason=reason,
        after={"restricted": True, "note": note, "version": fact.version},
    )
    notify_restriction(
        RestrictionChanged(subject_id=fact.subject_id, key=fact.key, restricted=True, actor=actor)
    )
    return fact


def lift_restriction(fact: MemoryFact, *, actor: Actor, reason: str, outcome: str) -> MemoryFact:
    """Inside a caller's transaction that holds the traveller's lock (`fact_edit` after a new
    value, or `fact_unrestrict`): the fact is used again, with its event and the listeners."""
    before = {"restricted": True, "note": fact.restriction_note, "version": fact.version}
    fact.restricted_at = None
    fact.restricted_by = ""
    fact.restriction_note = ""
    fact.save(update_fields=["restricted_at", "restricted_by", "restriction_note"])
    record_event(
        subject_id=fact.subject_id,
        key=fact.key,
        action=EventAction.UNRESTRICTED,
        actor=actor,
        reason=reason,
        before=before,
        after={"restricted": False, "outcome": outcome, "version": fact.version},
    )
    notify_restriction(
        RestrictionChanged(
            subject_id=fact.subject_id,
            key=fact.key,
            restricted=False,
            actor=actor,
            outcome=outcome,
        )
    )
    return fact


@transaction.atomic
def fact_unrestrict(
    *, subject_id: str, key: str, actor: Actor, reason: str, outcome: str
) -> MemoryFact:
    """Resume the use of a restricted fact. "confirmed": staff checked it and it is right (a
    note is required: the traveller is told it); "lifted": the traveller lifted it;
    "corrected": the value was changed (normally `fact_edit` does this itself)."""
    if outcome not in OUTCOMES:
        raise FactInvalid("Unknown outcome.", fields={"outcome": "Choose an outcome."})
    if actor.kind not in _PEOPLE:
        raise FactStateError("Only the traveller or staff can resume the use of a fact.")
    if outcome == CONFIRMED and not clean_reason(reason).strip():
        raise FactInvalid(
            "Say what was checked.", fields={"reason": "Say what you checked and found."}
        )
    fact = load_for_update(subject_id, key, None)
    if fact.restricted_at is None:
        raise FactStateError("The use of this fact is not stopped.")
    return lift_restriction(fact, actor=actor, reason=reason, outcome=outcome)
