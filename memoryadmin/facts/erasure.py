"""The one erasure path. Deleting is erasing, whoever deletes: staff, the traveller, the agent,
a reviewer's rejection or the retention sweep.

Erasing a fact removes its row, blanks the value snapshots of every event about it, replaces the
fact's key in the history by a keyed hash (so a fact's events still group, but the topic is gone),
records one event for the erasure, and calls every registered eraser so that copies of the value
kept elsewhere go too. Apps above `facts` (stored API replies, extraction transcripts, exports)
register their eraser from their `AppConfig.ready()`; `facts` never imports them.

Every entry point is a fixed number of SQL statements whatever the number of facts: one traveller
with 5 or 5,000 facts, or a sweep chunk of 1,000 facts across 1,000 travellers.

Callers are the services (`facts.services`), which hold the locks; nothing else calls these.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.db import connection
from django.utils import timezone
from django.utils.crypto import salted_hmac

from .actors import Actor
from .models import EventAction, FactEvent, MemoryFact

# A hashed key starts with "#", which normalize_key never leaves in a real key.
DIGEST_PREFIX = "#"
_DIGEST_SALT = "memoryadmin.facts.erasure.key-digest"
_DIGEST_HEX_LENGTH = 40
_DIGEST = re.compile(rf"^#[0-9a-f]{{{_DIGEST_HEX_LENGTH}}}$")


@dataclass(frozen=True)
class Erased:
    """What was just erased, handed to every registered eraser in the same transaction.

    `facts` are the (subject_id, key) pairs whose rows went; `cleared_subjects` are travellers
    who asked to forget everything (their facts are in `facts` only if listed by the caller, so
    erasers that keep per-traveller copies should look at `subject_ids`)."""

    facts: tuple[tuple[str, str], ...] = ()
    cleared_subjects: tuple[str, ...] = ()
    subject_ids: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        subjects = {subject_id for subject_id, _ in self.facts} | set(self.cleared_subjects)
        object.__setattr__(self, "subject_ids", frozenset(subjects))


Eraser = Callable[[Erased], None]
_ERASERS: dict[str, Eraser] = {}


def register_eraser(name: str, eraser: Eraser) -> None:
    """Called from an AppConfig.ready() by each app that keeps a copy of a fact value.

    The eraser runs inside the erasing transaction and must be set-based (a fixed number of
    statements whatever the size of `Erased`). Registering the same name again replaces it."""
    _ERASERS[name] = eraser


def registered_erasers() -> dict[str, Eraser]:
    return dict(_ERASERS)


def key_digest(subject_id: str, key: str) -> str:
    """The keyed hash that stands in for an erased key. HMAC-SHA256 with a key derived from
    SECRET_KEY, over subject and key, so the same topic of two travellers does not correlate and
    nobody without the secret can test guesses against it."""
    mac = salted_hmac(_DIGEST_SALT, f"{subject_id}\x00{key}", algorithm="sha256")
    return DIGEST_PREFIX + mac.hexdigest()[:_DIGEST_HEX_LENGTH]


def is_key_digest(key: str) -> bool:
    return bool(_DIGEST.match(key))


def history_keys(subject_id: str, key: str) -> list[str]:
    """The keys under which a fact's history is stored: its own, and its digest once erased."""
    if is_key_digest(key):
        return [key]
    return [key, key_digest(subject_id, key)]


# --- the statements ----------------------------------------------------------------------------


def _redact_history(rows: Sequence[tuple[str, str, str]]) -> None:
    """One UPDATE: blank the snapshots and hash the key of every event of these facts.
    `rows` are (subject_id, key, digest)."""
    if not rows:
        return
    table = FactEvent._meta.db_table
    now = timezone.now()
    if connection.vendor == "postgresql":
        # Arrays: one short statement whatever the size. The LATERAL subquery with OFFSET 0 is
        # not flattened, so each fact's events are found through (subject_id, key, created_at)
        # instead of a scan of the whole history per chunk.
        sql = (
            f'UPDATE "{table}" AS e SET key = m.digest, before = NULL, after = NULL, '  # noqa: S608
            "redacted_at = COALESCE(e.redacted_at, %s) FROM ("
            "SELECT hit.id, v.digest "
            "FROM unnest(%s::varchar[], %s::varchar[], %s::varchar[]) "
            "AS v(subject_id, key, digest) "
            f'CROSS JOIN LATERAL (SELECT x.id FROM "{table}" AS x '
            "WHERE x.subject_id = v.subject_id AND x.key = v.key OFFSET 0) AS hit) AS m "
            "WHERE e.id = m.id"
        )
        params: list[object] = [now, *(list(column) for column in zip(*rows, strict=True))]
    else:  # SQLite (the embedded default)
        source = "({}) AS v".format(
            " UNION ALL ".join(["SELECT %s AS subject_id, %s AS key, %s AS digest"] * len(rows))
        )
        params = [now, *(value for row in rows for value in row)]
        sql = (
            f'UPDATE "{table}" SET key = v.digest, before = NULL, after = NULL, '  # noqa: S608
            f"redacted_at = COALESCE(redacted_at, %s) FROM {source} "
            f'WHERE "{table}".subject_id = v.subject_id AND "{table}".key = v.key'
        )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def _record_erasures(
    rows: Sequence[tuple[str, str, Actor]], *, action: EventAction, reason: str
) -> None:
    """One INSERT: the event that says who erased which fact. `rows` are
    (subject_id, digest, actor)."""
    if connection.vendor != "postgresql":
        FactEvent.objects.bulk_create(
            [
                FactEvent(
                    subject_id=subject_id,
                    key=digest,
                    action=action,
                    actor_kind=actor.kind,
                    actor_user=actor.user,
                    actor_label=actor.label[:200],
                    reason=reason,
                )
                for subject_id, digest, actor in rows
            ]
        )
        return
    table = FactEvent._meta.db_table
    columns = list(zip(*[
        (subject_id, digest, actor.kind, getattr(actor.user, "pk", None), actor.label[:200])
        for subject_id, digest, actor in rows
    ], strict=True))
    sql = (
        f'INSERT INTO "{table}" (subject_id, key, action, actor_kind, actor_user_id, '  # noqa: S608
        "actor_label, reason, session_tag, created_at) "
        "SELECT v.subject_id, v.key, %s, v.kind, v.user_id, v.label, %s, '', %s "
        "FROM unnest(%s::varchar[], %s::varchar[], %s::varchar[], %s::integer[], "
        "%s::varchar[]) AS v(subject_id, key, kind, user_id, label)"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [action, reason, timezone.now(), *(list(c) for c in columns)])


def _run_erasers(erased: Erased) -> None:
    for eraser in _ERASERS.values():
        eraser(erased)


# --- entry points ------------------------------------------------------------------------------


def erase_facts(
    rows: Sequence[tuple[int, str, str, Actor]], *, action: EventAction, reason: str
) -> int:
    """Erase the given facts: (pk, subject_id, key, actor) each. Used for one fact and for a
    sweep chunk; the caller has locked the rows. Returns how many rows were deleted."""
    if not rows:
        return 0
    deleted, _ = MemoryFact.objects.filter(pk__in=[row[0] for row in rows]).delete()
    hashed = [(subject_id, key, key_digest(subject_id, key)) for _, subject_id, key, _ in rows]
    _redact_history(hashed)
    _record_erasures(
        [(subject_id, digest, row[3]) for row, (subject_id, _, digest) in zip(rows, hashed,
                                                                             strict=True)],
        action=action,
        reason=reason,
    )
    _run_erasers(Erased(facts=tuple((subject_id, key) for subject_id, key, _ in hashed)))
    return deleted


def erase_subject(subject_id: str) -> int:
    """Forget everything about one traveller: every fact, every value in their history, every
    copy elsewhere. Records no per-fact event (the caller records one "cleared" event). The
    caller has locked the subject. Returns how many facts were deleted."""
    deleted, _ = MemoryFact.objects.filter(subject_id=subject_id).delete()
    # Keys with history but no fact any more (erased before keys were hashed) go too.
    keys = list(
        FactEvent.objects.filter(subject_id=subject_id)
        .exclude(key="")
        .exclude(key__startswith=DIGEST_PREFIX)
        .values_list("key", flat=True)
        .distinct()
    )
    _redact_history([(subject_id, key, key_digest(subject_id, key)) for key in keys])
    _run_erasers(Erased(cleared_subjects=(subject_id,)))
    return deleted
