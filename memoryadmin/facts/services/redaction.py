"""Redacting one past version of a fact: its value and quote go from everywhere they are kept,
the version's record stays.

A history row can hold what should never have been kept (a third party's name, words the write
filter missed) while the fact itself is right today. Erasing the whole fact would lose the rest
of its history; this blanks one version only. The current version is never redacted here: that
is a correction (a new version) or a delete (the erasure path)."""

from __future__ import annotations

import json

from django.db import connection, transaction
from django.utils import timezone

from ..actors import Actor
from ..errors import FactInvalid, FactNotFound, FactStateError
from ..keyhash import history_hashes, value_digest
from ..models import EventAction, FactEvent
from ..redaction import version_redactors
from ..sql import SQL_REDACT_VERSION
from ..validation import clean_reason
from .commit import record_event
from .history import load_for_update

CURRENT_VERSION_REFUSAL = (
    "This is the current version: that is a correction or a delete, not a redaction."
)
SAME_WORDS_REFUSAL = (
    "Version {version} holds the same words as the current version: that is a correction or a "
    "delete, not a redaction."
)


@transaction.atomic
def fact_version_redact(
    *, subject_id: str, key: str, version: int, actor: Actor, reason: str
) -> int:
    """Blank version `version`'s value and quote in every snapshot that holds it (the `after` of
    the event that wrote it, the `before` of the next), in stored API replies that quote them
    (the registered redactors), and record a `version_redacted` event with the reason and a
    keyed hash of the old value. The version number, its time and actor stay; the current value
    and the other versions do not change. Returns how many history rows were blanked."""
    reason = clean_reason(reason).strip()
    if not reason:
        raise FactInvalid("Say why this version is redacted.", fields={"reason": "Required."})
    fact = load_for_update(subject_id, key, None)
    if version == fact.version:
        raise FactStateError(CURRENT_VERSION_REFUSAL)
    hashes = history_hashes(fact.subject_id, fact.key)
    written = (
        FactEvent.objects.filter(
            subject_id=fact.subject_id,
            key_hash__in=hashes,
            key=fact.key,
            after__contains={"version": version},
        )
        .order_by("created_at", "id")
        .first()
    )
    if written is None or not 0 < version < fact.version:
        raise FactNotFound(f"This fact has no version {version} in its history.")
    if written.after.get("redacted_at"):
        raise FactStateError(f"Version {version} is already redacted.")
    value = str(written.after.get("value") or "")
    if value == fact.value:
        raise FactStateError(SAME_WORDS_REFUSAL.format(version=version))
    words = [word for word in (value, str(written.after.get("evidence") or "")) if word]
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            SQL_REDACT_VERSION,
            {
                "subject": fact.subject_id,
                "key": fact.key,
                "hashes": hashes,
                "version": version,
                "now": now,
            },
        )
        blanked = cursor.rowcount
        for statement in version_redactors().values():
            cursor.execute(
                statement,
                {
                    "subject": fact.subject_id,
                    "key": fact.key,
                    "words": json.dumps(words),
                    "now": now,
                },
            )
    record_event(
        subject_id=fact.subject_id,
        key=fact.key,
        action=EventAction.VERSION_REDACTED,
        actor=actor,
        reason=reason,
        after={
            "redacted_version": version,
            "value_hash": value_digest(fact.subject_id, fact.key, value),
        },
    )
    return blanked
