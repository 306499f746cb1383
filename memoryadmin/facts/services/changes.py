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
from .forgetting import fact_delete
from .history import (
    apply_retention,
    commit_change,
    load_for_update,
    record_event,
    snapshot,
)


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
    never silently overwrites one it did not see."""
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
    before = snapshot(fact)
    fact.value = clean.value
    fact.category = clean.category
    fact.updated_at = timezone.now()
    # A person's correction is its own source: the old quote no longer supports it.
    fact.evidence = ""
    fact.evidence_origin = actor.origin
    if value_changed:  # who wrote the words the pages show; a new category alone is not that
        fact.rewritten_by, fact.rewritten_by_label = actor.rewriter
    if classify_sensitive(clean.key, clean.value):
        fact.sensitive = True  # masked in staff lists; a person wrote it, so no review needed
    apply_retention(fact, retention_rules())
    fact = commit_change(
        fact, before=before, action=EventAction.UPDATED, actor=actor, reason=reason
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
    before = snapshot(fact)
    fact.expires_at = timezone.now()
    fact.expiry_pinned = True
    return commit_change(
        fact, before=before, action=EventAction.EXPIRED, actor=actor, reason=reason
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
    before = snapshot(fact)
    fact.expiry_pinned = expires_at is not None
    if expires_at is None:
        apply_retention(fact, retention_rules())
    else:
        fact.expires_at = expires_at
    return commit_change(
        fact, before=before, action=EventAction.EXPIRY_CHANGED, actor=actor, reason=reason
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
    before = snapshot(fact)
    fact.sensitive = sensitive
    apply_retention(fact, retention_rules())  # sensitive facts have their own retention
    action = EventAction.FLAGGED_SENSITIVE if sensitive else EventAction.UNFLAGGED_SENSITIVE
    return commit_change(fact, before=before, action=action, actor=actor, reason=reason)


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
    before = snapshot(fact)
    fact.status = FactStatus.ACTIVE
    return commit_change(
        fact, before=before, action=EventAction.APPROVED, actor=actor, reason=reason
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
    confirmed = 0
    facts = (
        MemoryFact.objects.select_for_update()
        .filter(subject_id=subject_id, key__in=list(quotes), evidence_origin=Origin.AGENT)
        .order_by("key")
    )
    for fact in facts:
        if not fact.evidence or fact.evidence != quotes.get(fact.key):
            continue
        before = snapshot(fact)
        fact.evidence_origin = Origin.EXTRACTION
        fact.save(update_fields=["evidence_origin"])
        record_event(
            subject_id=subject_id,
            key=fact.key,
            action=EventAction.UPDATED,
            actor=actor,
            reason=clean_reason(reason or "the assistant's quote is the traveller's words"),
            before=before,
            after=snapshot(fact),
            session_tag=session_tag,
        )
        confirmed += 1
    return confirmed
