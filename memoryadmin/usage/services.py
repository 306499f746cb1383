"""Every write of use receipts: record a batch, sweep the expired (erasing with the facts is
`sql.py`'s parts of the erasing statement, registered from `UsageConfig.ready()`).

A receipt is its own append-only record (who had which fact in which turn), written by the
agent host through the API; recording one writes no FactEvent (that would double every turn's
writes). A batch costs two statements whatever its size: a SELECT of the named facts and one
COPY."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from memoryadmin.facts.keyhash import key_digest
from memoryadmin.facts.selectors import memory_settings, use_retention_days
from memoryadmin.facts.validation import normalize_key, sanitize_text, session_tag

from .models import TURN_ID_MAX_LENGTH, UseHow
from .sql import SQL_COPY_USES, SQL_FACT_IDS, SQL_SWEEP_USES, SQL_TAKE_JOB_USES

MAX_KEYS_PER_TURN = 200  # more than any prompt holds; the rest of a longer list is ignored


@dataclass(frozen=True)
class TurnUse:
    """What the agent had in one turn, as the host reports it (keys as it knows them).
    `tag` is the session's tag when only that is known (receipts that rode with a posted
    turn's job): then `session_id` is not read."""

    session_id: str
    turn_id: str
    injected: Sequence[str] = ()
    recalled: Sequence[str] = ()
    tag: str | None = None


# A batch as rows: per turn (tag, turn id), per key (how, key). Keys are cleaned once per batch.
_Turn = tuple[str, str, list[tuple[str, str]]]


def _turns(uses: Iterable[TurnUse]) -> tuple[list[_Turn], set[str]]:
    """Each turn's distinct (how, key) pairs, keys normalised once per batch (a burst of turns
    names the same few facts over and over), and every key named."""
    turns: list[_Turn] = []
    cleaned: dict[str, str] = {}
    named: set[str] = set()
    for use in uses:
        tag = use.tag if use.tag is not None else session_tag(use.session_id)
        turn = sanitize_text(use.turn_id)[:TURN_ID_MAX_LENGTH]
        pairs: list[tuple[str, str]] = []
        for how, keys in (
            (UseHow.INJECTED.value, use.injected),
            (UseHow.RECALLED.value, use.recalled),
        ):
            seen: set[str] = set()
            for raw in list(keys)[:MAX_KEYS_PER_TURN]:
                if not isinstance(raw, str):
                    continue
                key = cleaned.get(raw)
                if key is None:
                    key = cleaned[raw] = normalize_key(raw)
                if key and key not in seen:
                    seen.add(key)
                    pairs.append((how, key))
        if pairs:
            named.update(key for _, key in pairs)
            turns.append((tag, turn, pairs))
    return turns, named


def _copy_text(value: str) -> str:
    """A value in COPY's text format: backslash, tab, newline and carriage return escaped."""
    return (
        value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    )


def uses_record(*, subject_id: str, uses: Iterable[TurnUse]) -> int:
    """Append the receipts of one or many turns of one traveller, in one transaction: one
    SELECT resolves the named keys to the traveller's facts (unknown keys are dropped; the
    facts are share-locked so an erasure waits for the receipts and then takes them), then one
    COPY. Returns the receipts written."""
    turns, named = _turns(uses)
    if not turns:
        return 0
    now = timezone.now()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(SQL_FACT_IDS, {"subject": subject_id, "keys": sorted(named)})
            known = dict(cursor.fetchall())
        if not known:
            return 0
        # The per-key part of a row (its keyed hash and fact row id), hashed once per batch.
        ids = {key: (key_digest(subject_id, key), fact_id) for key, fact_id in known.items()}
        # COPY text: the per-turn prefix and the per-key suffix are built once each, so a
        # receipt costs one string join (the batch goes to the server as one buffer).
        suffix = {key: f"\t{digest}\t{fact_id}\t" for key, (digest, fact_id) in ids.items()}
        head = f"{_copy_text(subject_id)}\t"
        stamp = now.isoformat()
        lines: list[str] = []
        for tag, turn, pairs in turns:
            prefix = f"{head}{tag}\t{_copy_text(turn)}\t{stamp}"
            lines.extend(f"{prefix}{suffix[key]}{how}\n" for how, key in pairs if key in suffix)
        if lines:
            with connection.cursor() as cursor, cursor.copy(SQL_COPY_USES) as copy:
                copy.write("".join(lines))
        return len(lines)


def record_turn_bodies(subject_id: str, turns: Sequence[dict[str, Any]]) -> int:
    """`uses_record` for the client's turn bodies (DjangoMemoryStore.record_uses); a body
    that is not one is skipped, like an unknown key."""
    uses = [
        TurnUse(
            session_id=str(turn.get("session_id") or ""),
            turn_id=str(turn.get("turn_id") or ""),
            injected=[k for k in turn.get("injected") or () if isinstance(k, str)],
            recalled=[k for k in turn.get("recalled") or () if isinstance(k, str)],
        )
        for turn in turns
        if isinstance(turn, dict) and turn.get("turn_id")
    ]
    return uses_record(subject_id=subject_id, uses=uses)


def _keys(used: Any, how: str) -> list[str]:
    keys = used.get(how) if isinstance(used, dict) else None
    return [key for key in keys if isinstance(key, str)] if isinstance(keys, list) else []


def uses_take_from_jobs(*, job_id: int | None = None, limit: int = 1000) -> tuple[int, bool]:
    """Record the receipts that rode with posted turns (`ExtractionJob.used`) and empty them,
    in one transaction: the given job's (its task calls this), or a chunk of any job's (the
    beat sweep: skipped jobs have no task). One COPY per traveller in the chunk. Returns
    (receipts written, more left)."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(SQL_TAKE_JOB_USES, {"job": job_id, "limit": limit})
            taken = cursor.fetchall()
        by_subject: dict[str, list[TurnUse]] = {}
        for subject_id, tag, turn_id, used in taken:
            if isinstance(used, str):
                used = json.loads(used)
            by_subject.setdefault(subject_id, []).append(
                TurnUse(
                    session_id="",
                    turn_id=turn_id,
                    tag=tag,
                    injected=_keys(used, "injected"),
                    recalled=_keys(used, "recalled"),
                )
            )
        written = sum(
            uses_record(subject_id=subject_id, uses=uses) for subject_id, uses in by_subject.items()
        )
    return written, len(taken) >= limit


def uses_retention_days() -> int:
    """The memory settings' choice, else MEMORY_USE_RETENTION_DAYS."""
    return use_retention_days(memory_settings())


def uses_retention_cutoff(now: datetime) -> datetime:
    """Receipts written before this time are past their retention."""
    return now - timedelta(days=uses_retention_days())


def uses_sweep_expired(*, limit: int = 10_000) -> tuple[int, bool]:
    """Delete one chunk of receipts past `use_retention_days`: (deleted, more left). A
    traveller under legal hold keeps theirs (as the history; and as the drop by month)."""
    cutoff = uses_retention_cutoff(timezone.now())
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(SQL_SWEEP_USES, {"cutoff": cutoff, "limit": limit})
        deleted = cursor.rowcount
    return deleted, deleted >= limit
