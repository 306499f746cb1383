"""The traveller's own switches and the legal hold: writes to the Subject row."""

from __future__ import annotations

from django.db import transaction

from .. import retention
from ..actors import Actor
from ..errors import (
    FactInvalid,
)
from ..models import (
    EventAction,
    MemoryFact,
    Subject,
)
from ..validation import (
    clean_reason,
    clean_subject_id,
)
from .commit import record_event
from .history import lock_subject


@transaction.atomic
def subject_set_preferences(
    *,
    subject_id: str,
    actor: Actor,
    memory_paused: bool | None = None,
    memory_use_paused: bool | None = None,
    reason: str = "",
) -> Subject:
    """The traveller's switches: stop learning new facts, and/or stop the agent using them."""
    clean_subject_id(subject_id)
    subject = lock_subject(subject_id)
    before = {
        "memory_paused": subject.memory_paused,
        "memory_use_paused": subject.memory_use_paused,
    }
    if memory_paused is not None:
        subject.memory_paused = memory_paused
    if memory_use_paused is not None:
        subject.memory_use_paused = memory_use_paused
    after = {"memory_paused": subject.memory_paused, "memory_use_paused": subject.memory_use_paused}
    if after == before:
        return subject
    subject.save(update_fields=["memory_paused", "memory_use_paused", "updated_at"])
    record_event(
        subject_id=subject_id,
        key="",
        action=EventAction.PREFERENCES_CHANGED,
        actor=actor,
        reason=reason,
        before=before,
        after=after,
    )
    return subject


@transaction.atomic
def subject_set_legal_hold(*, subject_id: str, hold: bool, actor: Actor, reason: str) -> Subject:
    """Place or lift a legal hold: retention sweeps and rule changes leave a held traveller's
    facts alone. Lifting it brings their expiry dates back in line with today's rules."""
    clean_subject_id(subject_id)
    if not clean_reason(reason):
        raise FactInvalid("Give a reason.", fields={"reason": "Say why, e.g. the case number."})
    subject = lock_subject(subject_id)
    if subject.legal_hold == hold:
        return subject
    subject.legal_hold = hold
    subject.save(update_fields=["legal_hold", "updated_at"])
    if not hold:
        MemoryFact.objects.filter(subject_id=subject_id, expiry_pinned=False).update(
            expires_at=retention.expiry_expression(retention.enabled_rules())
        )
    record_event(
        subject_id=subject_id,
        key="",
        action=EventAction.LEGAL_HOLD_PLACED if hold else EventAction.LEGAL_HOLD_LIFTED,
        actor=actor,
        reason=reason,
        before={"legal_hold": not hold},
        after={"legal_hold": hold},
    )
    return subject
