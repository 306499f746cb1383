"""How a change to a fact is made and kept in its history, shared by the services of this
package (not exported: callers use the services): the traveller's lock, the load-lock-compare
and save-and-record steps of a single-fact change, the snapshots and FactEvent record, whether a
restatement changes nothing, and the retention a version falls under."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.utils import timezone

from memoryadmin.db import replicas

from .. import retention
from ..actors import Actor
from ..errors import FactConflict, FactNotFound
from ..models import (
    EventAction,
    FactEvent,
    MemoryFact,
    RetentionRule,
    Subject,
)
from ..validation import CleanFact, clean_reason, clean_subject_id, normalize_key


def lock_subject(subject_id: str) -> Subject:
    """Create the subject if needed and lock its row for the rest of the transaction. Every
    write that locks a traveller records, at commit, its position for read-your-writes."""
    replicas.written(subject_id)
    subject = Subject.objects.select_for_update().filter(subject_id=subject_id).first()
    if subject is None:
        # ON CONFLICT DO NOTHING waits for a concurrent creator instead of failing.
        Subject.objects.bulk_create([Subject(subject_id=subject_id)], ignore_conflicts=True)
        subject = Subject.objects.select_for_update().get(subject_id=subject_id)
    return subject


def record_event(
    *,
    subject_id: str,
    key: str,
    action: EventAction,
    actor: Actor,
    reason: str,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    session_tag: str = "",
    receipt: str = "",
) -> FactEvent:
    return FactEvent.objects.create(
        subject_id=subject_id,
        key=key,
        action=action,
        actor_kind=actor.kind,
        actor_user=actor.user,
        actor_label=actor.label[:200],
        reason=clean_reason(reason),
        before=before,
        after=after,
        session_tag=session_tag,
        receipt=receipt,
    )


def matching_rule(
    rules: Iterable[RetentionRule], *, key: str, category: str, sensitive: bool
) -> RetentionRule | None:
    """The rule that governs a fact (see facts.retention for the precedence)."""
    return retention.winning_rule(rules, key=key, category=category, sensitive=sensitive)


def apply_retention(fact: MemoryFact, rules: Iterable[RetentionRule]) -> None:
    if fact.expiry_pinned:
        return
    rule = matching_rule(rules, key=fact.key, category=fact.category, sensitive=fact.sensitive)
    fact.expires_at = retention.expiry_for(rule, fact.updated_at)


def load_for_update(subject_id: str, key: str, expected_version: int | None) -> MemoryFact:
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


def commit_change(
    fact: MemoryFact, *, before: dict[str, Any], action: EventAction, actor: Actor, reason: str
) -> MemoryFact:
    """Bump the version, save, and record the event with both snapshots. Every new version
    moves `changed_at` (what the desk shows as "Updated"); only a value change moves
    `updated_at`, which retention counts from."""
    fact.version += 1
    fact.changed_at = timezone.now()
    fact.save()
    record_event(
        subject_id=fact.subject_id,
        key=fact.key,
        action=action,
        actor=actor,
        reason=reason,
        before=before,
        after=snapshot(fact),
    )
    return fact


def snapshot(fact: Mapping[str, Any] | MemoryFact) -> dict[str, Any]:
    """What an event keeps of a fact: a model instance or a planned row (a mapping)."""
    row = fact if isinstance(fact, Mapping) else vars(fact)
    expires_at = row["expires_at"]
    shot = {
        "value": row["value"],
        "category": row["category"],
        "status": row["status"],
        "sensitive": row["sensitive"],
        "expires_at": expires_at.isoformat() if expires_at else None,
        "version": row["version"],
    }
    # The quote is the traveller's words: kept with the version it supports, and blanked with
    # the value when the fact is erased (the snapshots go whole).
    if row.get("evidence"):
        shot["evidence"] = row["evidence"]
    return shot


def row_expiry(row: dict[str, Any], rules: Iterable[RetentionRule]) -> datetime | None:
    if row["expiry_pinned"]:
        return row["expires_at"]
    rule = matching_rule(
        rules, key=row["key"], category=row["category"], sensitive=row["sensitive"]
    )
    return retention.expiry_for(rule, row["updated_at"])


def is_unchanged(row: Mapping[str, Any] | MemoryFact, clean: CleanFact, now: datetime) -> bool:
    """Whether restating `clean` changes nothing: the same value as stored (both are cleaned, so
    spacing, NFC and invisible characters already agree; a change of case is a correction and
    is kept, as upstream keeps it), the same category, and the held fact has not expired
    (restating an expired fact revives it). The upsert and the import both decide with this."""
    held = row if isinstance(row, Mapping) else vars(row)
    expires_at = held["expires_at"]
    return (
        held["value"] == clean.value
        and held["category"] == clean.category
        and (expires_at is None or expires_at > now)
    )
