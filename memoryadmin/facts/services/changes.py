"""A person changes one fact, or several at once: edit, expiry, sensitivity, review, reveal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from ..actors import Actor
from ..choices import Origin
from ..corrections import Corrected, notify_corrected
from ..counting import actor_label, count_blocked
from ..errors import (
    FactBlocked,
    FactInvalid,
    FactNotFound,
    FactStateError,
)
from ..models import (
    EventAction,
    FactStatus,
    MemoryFact,
)
from ..selectors import (
    memory_settings,
    retention_rules,
)
from ..validation import (
    MemoryWriteFilter,
    classify_sensitive,
    clean_reason,
    validate_fact,
)
from .commit import plan_commit, record_event
from .forgetting import fact_delete
from .history import (
    commit_change,
    fact_row,
    load_for_update,
)
from .plan import WritePlan, change_plan
from .restriction import CORRECTED, lift_restriction


@transaction.atomic
def fact_edit(
    *,
    subject_id: str,
    key: str,
    expected_version: int,
    actor: Actor,
    value: str | None = None,
    category: str | None = None,
    reason: str = "",
) -> MemoryFact:
    """A person corrects a fact. A stale `expected_version` raises FactConflict: a correction
    never silently overwrites one it did not see. A new value lifts a restriction (the
    fact was checked and corrected: "corrected")."""
    fact = load_for_update(subject_id, key, expected_version)
    clean = validate_fact(
        fact.key,
        fact.value if value is None else value,
        fact.category if category is None else category,
    )
    try:
        MemoryWriteFilter(memory_settings().blocked_patterns).enforce(clean.key, clean.value)
    except FactBlocked:
        count_blocked(actor_label(actor))
        raise
    if clean.value == fact.value and clean.category == fact.category:  # a case change counts
        return fact
    value_changed = clean.value != fact.value
    # A person's correction is its own source (`clean` has no quote: the old one no longer
    # supports it); a sensitive topic is masked in staff lists, with no review (a person
    # wrote it).
    fact = commit_change(
        fact,
        action=EventAction.UPDATED,
        actor=actor,
        reason=reason,
        clean=clean,
        rules=retention_rules(),
        sensitive=fact.sensitive or classify_sensitive(clean.key, clean.value) is not None,
    )
    if value_changed:  # a new category alone corrects nothing another system holds
        notify_corrected(
            Corrected(
                subject_id=fact.subject_id,
                key=fact.key,
                version=fact.version,
                actor_kind=str(actor.kind),
            )
        )
        if fact.restricted_at is not None:  # checked and corrected: the agent may use it again
            lift_restriction(fact, actor=actor, reason=reason, outcome=CORRECTED)
    return fact


@transaction.atomic
def fact_expire(
    *,
    subject_id: str,
    key: str,
    actor: Actor,
    reason: str = "",
    expected_version: int | None = None,
) -> MemoryFact:
    """Hide the fact from the agent now; the retention sweep deletes it later."""
    fact = load_for_update(subject_id, key, expected_version)
    return commit_change(
        fact,
        action=EventAction.EXPIRED,
        actor=actor,
        reason=reason,
        expires_at=timezone.now(),
        expiry_pinned=True,
    )


@transaction.atomic
def fact_set_expiry(
    *,
    subject_id: str,
    key: str,
    expires_at: datetime | None,
    actor: Actor,
    reason: str = "",
    expected_version: int | None = None,
) -> MemoryFact:
    """Pin an expiry date, or pass None to hand the fact back to the retention rules."""
    if expires_at is not None and timezone.is_naive(expires_at):
        raise FactInvalid("Expiry needs a time zone.", fields={"expires_at": "Needs a time zone."})
    fact = load_for_update(subject_id, key, expected_version)
    pinned = {"expires_at": expires_at} if expires_at is not None else {}
    return commit_change(
        fact,
        action=EventAction.EXPIRY_CHANGED,
        actor=actor,
        reason=reason,
        rules=None if expires_at is not None else retention_rules(),
        expiry_pinned=expires_at is not None,
        **pinned,
    )


def _set_sensitive(
    *,
    subject_id: str,
    key: str,
    sensitive: bool,
    actor: Actor,
    reason: str,
    expected_version: int | None,
) -> MemoryFact:
    fact = load_for_update(subject_id, key, expected_version)
    if fact.sensitive == sensitive:
        return fact
    action = EventAction.FLAGGED_SENSITIVE if sensitive else EventAction.UNFLAGGED_SENSITIVE
    return commit_change(
        fact,
        action=action,
        actor=actor,
        reason=reason,
        rules=retention_rules(),  # sensitive facts have their own retention
        sensitive=sensitive,
    )


@transaction.atomic
def fact_flag_sensitive(
    *,
    subject_id: str,
    key: str,
    actor: Actor,
    reason: str = "",
    expected_version: int | None = None,
) -> MemoryFact:
    """Special-category data: masked for staff, never in tier one, recalled only on demand."""
    return _set_sensitive(
        subject_id=subject_id,
        key=key,
        sensitive=True,
        actor=actor,
        reason=reason,
        expected_version=expected_version,
    )


@transaction.atomic
def fact_unflag_sensitive(
    *,
    subject_id: str,
    key: str,
    actor: Actor,
    reason: str = "",
    expected_version: int | None = None,
) -> MemoryFact:
    return _set_sensitive(
        subject_id=subject_id,
        key=key,
        sensitive=False,
        actor=actor,
        reason=reason,
        expected_version=expected_version,
    )


@transaction.atomic
def fact_approve(
    *,
    subject_id: str,
    key: str,
    actor: Actor,
    reason: str = "",
    expected_version: int | None = None,
) -> MemoryFact:
    """A reviewer lets a held fact through to the agent (it stays sensitive if it was)."""
    fact = load_for_update(subject_id, key, expected_version)
    if fact.status != FactStatus.PENDING_REVIEW:
        raise FactStateError("Only facts waiting for review can be approved.")
    return commit_change(
        fact, action=EventAction.APPROVED, actor=actor, reason=reason, status=FactStatus.ACTIVE
    )


@transaction.atomic
def fact_reveal(*, subject_id: str, key: str, actor: Actor, reason: str) -> MemoryFact:
    """A person looks at a sensitive value: an access event with the reason, and no value in it
    (the history must not become a second copy of what was masked)."""
    if not clean_reason(reason).strip():
        raise FactInvalid("Say why you need to see this value.", fields={"reason": "Required."})
    fact = load_for_update(subject_id, key, None)
    record_event(
        subject_id=fact.subject_id,
        key=fact.key,
        action=EventAction.VALUE_REVEALED,
        actor=actor,
        reason=reason,
    )
    return fact


BULK_ACTIONS = ("expire", "flag_sensitive", "delete")


@transaction.atomic
def facts_bulk_apply(
    *, subject_id: str, keys: Sequence[str], action: str, actor: Actor, reason: str
) -> int:
    """Expire, flag or delete several facts of one traveller at once: all or nothing, one event
    per fact (each with the same reason). Returns how many facts were changed."""
    if action not in BULK_ACTIONS:
        raise FactInvalid("Unknown bulk action.", fields={"action": "Choose an action."})
    if not keys:
        raise FactInvalid("Select at least one fact.", fields={"keys": "Select a fact."})
    done = 0
    for key in dict.fromkeys(keys):
        if action == "expire":
            fact_expire(subject_id=subject_id, key=key, actor=actor, reason=reason)
        elif action == "flag_sensitive":
            fact_flag_sensitive(subject_id=subject_id, key=key, actor=actor, reason=reason)
        elif not fact_delete(subject_id=subject_id, key=key, actor=actor, reason=reason):
            raise FactNotFound("A selected fact no longer exists; nothing was changed.")
        done += 1
    return done


@transaction.atomic
def fact_quotes_confirm(
    *,
    subject_id: str,
    quotes: Mapping[str, str],
    actor: Actor,
    session_tag: str = "",
    reason: str = "",
) -> int:
    """save_memory's quotes (evidence origin "agent": never shown as the traveller's words)
    that the caller found in the traveller's messages of a posted turn (extraction's check,
    `clean_evidence` with the turn as its sources) become the traveller's words (evidence
    origin "extraction": "you said on ..."). `quotes` maps a key to the quote checked; a fact
    whose quote changed since is left alone. The version is not bumped (the fact did not
    change, so a host's If-Match stays good); each confirmation is an event. Returns how many
    were confirmed."""
    if not quotes:
        return 0
    facts = (
        MemoryFact.objects.select_for_update()
        .filter(subject_id=subject_id, key__in=list(quotes), evidence_origin=Origin.AGENT)
        .order_by("key")
    )
    plan = WritePlan()
    for fact in facts:
        if not fact.evidence or fact.evidence != quotes.get(fact.key):
            continue
        row = fact_row(fact)  # the same version: only where its quote came from changes
        more = change_plan(
            row, {**row, "evidence_origin": str(Origin.EXTRACTION)}, action=EventAction.UPDATED
        )
        plan.updates += more.updates
        plan.events += more.events
    if plan:
        plan_commit(
            plan,
            subject_id=subject_id,
            actor=actor,
            reason=reason or "the assistant's quote is the traveller's words",
            session_tag=session_tag,
        )
    return len(plan.updates)
