"""Erasing: reject, delete (and its async twin), clear and forget everything with a receipt.
All go through facts.erasure."""

from __future__ import annotations

import secrets
from typing import Any

from django.db import transaction

from memoryadmin import db

from .. import erasure
from ..actors import Actor
from ..counting import actor_label, count_erased
from ..errors import (
    FactNotFound,
    FactStateError,
)
from ..models import (
    EventAction,
    FactEvent,
    FactStatus,
    MemoryFact,
)
from ..selectors import (
    ClearReceipt,
    receipt_from_event,
)
from ..validation import (
    clean_reason,
    clean_subject_id,
    normalize_key,
)
from .history import (
    load_for_update,
    lock_subject,
)


def _remove(fact: MemoryFact, *, action: EventAction, actor: Actor, reason: str) -> None:
    erased = erasure.erase_facts(
        [(fact.subject_id, fact.key, actor)], action=action, reason=clean_reason(reason)
    )
    count_erased(actor_label(actor), erased)


@transaction.atomic
def fact_reject(
    *,
    subject_id: str,
    key: str,
    actor: Actor,
    reason: str = "",
    expected_version: int | None = None,
) -> None:
    """A reviewer refuses a held fact: it is erased, and the history keeps only the decision."""
    fact = load_for_update(subject_id, key, expected_version)
    if fact.status != FactStatus.PENDING_REVIEW:
        raise FactStateError("Only facts waiting for review can be rejected.")
    _remove(fact, action=EventAction.REJECTED, actor=actor, reason=reason)


@transaction.atomic
def fact_delete(
    *,
    subject_id: str,
    key: str,
    actor: Actor,
    reason: str = "",
    expected_version: int | None = None,
) -> bool:
    """Erase one fact. True when something was deleted (the upstream delete_fact contract).

    Without `expected_version` the fact is not read first: after the traveller's lock, one
    statement deletes it (if there) and erases its history and copies."""
    if expected_version is not None:
        try:
            fact = load_for_update(subject_id, key, expected_version)
        except FactNotFound:
            return False
        _remove(fact, action=EventAction.DELETED, actor=actor, reason=reason)
        return True
    clean_subject_id(subject_id)
    key = normalize_key(key) if isinstance(key, str) else ""
    if not key:  # no fact has an empty key: nothing to delete (upstream answers False too)
        return False
    lock_subject(subject_id)
    erased = erasure.erase_facts(
        [(subject_id, key, actor)],
        action=EventAction.DELETED,
        reason=clean_reason(reason),
    )
    count_erased(actor_label(actor), erased)
    return bool(erased)


async def fact_delete_async(
    *, conn: Any, subject_id: str, key: str, actor: Actor, reason: str = ""
) -> bool:
    """`fact_delete` on an async psycopg connection, in one transaction of its own, for
    DjangoMemoryStore's native path: the traveller's lock and the erasure as one call of their
    server-side function, or sent together (pipeline mode, one round trip) where there is none
    (`db.locked_write`). PostgreSQL only; the caller checked `erasure.native_ready()`. A
    traveller never stored has nothing to delete (no row is made)."""
    clean_subject_id(subject_id)
    key = normalize_key(key) if isinstance(key, str) else ""
    if not key:  # no fact has an empty key: nothing to delete
        return False
    write, params = erasure.erase_fact_write(
        subject_id, key, actor, action=EventAction.DELETED, reason=clean_reason(reason)
    )
    # One statement or one round trip (`db.locked_write`): the traveller's lock, then the
    # erasure, one transaction; the erasure's snapshot, taken after the lock, sees every event
    # that a writer who held the lock before us committed.
    return _erased_async(actor, await db.locked_write(conn, write, params))


def _erased_async(actor: Actor, rows: list[Any]) -> bool:
    count_erased(actor_label(actor), len(rows), using_django=False)
    return bool(rows)


def _clear(subject_id: str, *, actor: Actor, reason: str, receipt: str = "") -> FactEvent:
    """Erase everything, then keep per fact what a single deletion keeps (category, when
    learned, how many changes; the path and receipt): never its key or value. The erasing
    statement returns the facts it deleted; their `forgotten` events and the one
    `subject_cleared` event go in together in one INSERT, so a clear stays a fixed number of
    statements (lock, erase, bump, events) whatever the number of facts."""
    clean_subject_id(subject_id)
    subject = lock_subject(subject_id)
    gone = erasure.erase_subject(subject_id)
    count_erased("clear", len(gone))
    subject.purge_generation += 1
    subject.save(update_fields=["purge_generation", "updated_at"])
    reason = clean_reason(reason)
    who = {
        "actor_kind": actor.kind,
        "actor_user": actor.user,
        "actor_label": actor.label[:200],
        "reason": reason,
        "subject_id": subject_id,
    }
    path = {"path": "forget_everything" if receipt else "clear", "receipt": receipt}
    summaries = [
        FactEvent(
            key=erasure.key_digest(subject_id, key),
            key_hash=erasure.key_digest(subject_id, key),
            action=EventAction.FORGOTTEN,
            **who,
            after={
                "erased_fact": {
                    **erasure.erased_fact_summary(category, created_at, version)["erased_fact"],
                    **path,
                }
            },
        )
        for key, category, created_at, version in gone
    ]
    after: dict[str, Any] = {
        "facts_deleted": len(gone),
        "purge_generation": subject.purge_generation,
    }
    if receipt:
        after["receipt"] = receipt
    cleared = FactEvent(
        key="", action=EventAction.SUBJECT_CLEARED, after=after, receipt=receipt, **who
    )
    FactEvent.objects.bulk_create([*summaries, cleared])  # the cleared event last: the newest
    return cleared


@transaction.atomic
def subject_clear(*, subject_id: str, actor: Actor, reason: str = "") -> int:
    """Forget everything about a traveller and bump the purge generation (even when there was
    nothing), so that an extraction already in flight discards its batch. Returns the new
    generation."""
    event = _clear(subject_id, actor=actor, reason=reason)
    return event.after["purge_generation"]


# No 0/O, 1/I/L: the number is read aloud to support staff over the phone.
_RECEIPT_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"


def new_receipt_number() -> str:
    raw = "".join(secrets.choice(_RECEIPT_ALPHABET) for _ in range(12))
    return f"R-{raw[:4]}-{raw[4:8]}-{raw[8:]}"


@transaction.atomic
def subject_forget(*, subject_id: str, actor: Actor, reason: str = "") -> ClearReceipt:
    """`subject_clear` with a receipt: its number, time and count live in the subject_cleared
    event itself, so the receipt is part of the audit trail and staff can find it by number."""
    event = _clear(subject_id, actor=actor, reason=reason, receipt=new_receipt_number())
    return receipt_from_event(event)
