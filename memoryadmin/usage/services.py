"""Every write of use receipts: record a batch, sweep the expired (erasing with the facts is
`sql.py`'s parts of the erasing statement, registered from `UsageConfig.ready()`).

A receipt is its own append-only record (who had which fact in which turn), written by the
agent host through the API; recording one writes no FactEvent (that would double every turn's
writes). A batch costs two statements whatever its size: a SELECT of the named facts and one
COPY."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
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
MAX_VERSION = 2_147_483_647  # a version is a PostgreSQL integer


# One item of `injected` / `recalled`: a key (as hosts sent before versions were kept), or the
# key with the fact's version the host saw ({"key": ..., "version": n}).
UsedItem = str | Mapping[str, Any]


@dataclass(frozen=True)
class TurnUse:
    """What the agent had in one turn, as the host reports it (keys as it knows them, each
    with the version it saw when it knows it). `tag` is the session's tag when only that is
    known (receipts that rode with a posted turn's job): then `session_id` is not read."""

    session_id: str
    turn_id: str
    injected: Sequence[UsedItem] = ()
    recalled: Sequence[UsedItem] = ()
    tag: str | None = None


# A batch as rows: per turn (tag, turn id), per fact (how, key, version seen or None). Keys are
# cleaned once per batch.
_Turn = tuple[str, str, list[tuple[str, str, int | None]]]


def item_version(raw: Any) -> int | None:
    """The version a used item names: a positive int (not a bool), else None."""
    version = raw.get("version") if type(raw) is dict or isinstance(raw, Mapping) else None
    if type(version) is int and 0 < version <= MAX_VERSION:
        return version
    return None


def _turns(uses: Iterable[TurnUse]) -> tuple[list[_Turn], set[tuple[str, int | None]]]:
    """Each turn's distinct (how, key) pairs with the version seen, keys normalised once per
    batch (a burst of turns names the same few facts over and over), and every (key, version)
    named."""
    turns: list[_Turn] = []
    cleaned: dict[str, str] = {}
    named: set[tuple[str, int | None]] = set()
    for use in uses:
        tag = use.tag if use.tag is not None else session_tag(use.session_id)
        turn = sanitize_text(use.turn_id)[:TURN_ID_MAX_LENGTH]
        pairs: list[tuple[str, str, int | None]] = []
        for how, items in (
            (UseHow.INJECTED.value, use.injected),
            (UseHow.RECALLED.value, use.recalled),
        ):
            chosen: dict[str, int | None] = {}  # key -> version, the first naming wins
            for raw in items[:MAX_KEYS_PER_TURN]:
                if type(raw) is str:
                    name, version = raw, None
                elif (type(raw) is dict or isinstance(raw, Mapping)) and type(
                    raw.get("key")
                ) is str:
                    name, version = raw["key"], item_version(raw)
                else:
                    continue
                key = cleaned.get(name)
                if key is None:
                    key = cleaned[name] = normalize_key(name)
                if key and key not in chosen:
                    chosen[key] = version
            pairs.extend([(how, key, version) for key, version in chosen.items()])
        if pairs:
            named.update([(key, version) for _, key, version in pairs])
            turns.append((tag, turn, pairs))
    return turns, named


def _versioned(version: int | None, base: str, current: int) -> str:
    """The middle of a receipt's COPY row (keyed hash, fact id, version, assumed). Without a
    version, or with one the fact has not reached yet (it cannot have been seen), the current
    one is taken, and the row says so."""
    if version is None or version > current:
        return f"{base}{current}\tt\t"
    return f"{base}{version}\tf\t"


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
            keys = sorted({key for key, _ in named})
            cursor.execute(SQL_FACT_IDS, {"subject": subject_id, "keys": keys})
            known = {key: (fact_id, version) for key, fact_id, version in cursor.fetchall()}
        if not known:
            return 0
        # COPY text: the per-turn prefix and the per-(key, version) middle are built once each,
        # so a receipt costs one string join (the batch goes to the server as one buffer). A
        # key is hashed once per batch.
        bases = {
            key: (f"\t{key_digest(subject_id, key)}\t{fact_id}\t", current)
            for key, (fact_id, current) in known.items()
        }
        middle = {
            (key, version): _versioned(version, *bases[key])
            for key, version in named
            if key in bases
        }
        head = f"{_copy_text(subject_id)}\t"
        stamp = now.isoformat()
        lines: list[str] = []
        for tag, turn, pairs in turns:
            prefix = f"{head}{tag}\t{_copy_text(turn)}\t{stamp}"
            lines.extend(
                f"{prefix}{middle[key, version]}{how}\n"
                for how, key, version in pairs
                if (key, version) in middle
            )
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
            injected=[k for k in turn.get("injected") or () if isinstance(k, str | dict)],
            recalled=[k for k in turn.get("recalled") or () if isinstance(k, str | dict)],
        )
        for turn in turns
        if isinstance(turn, dict) and turn.get("turn_id")
    ]
    return uses_record(subject_id=subject_id, uses=uses)


def _keys(used: Any, how: str) -> list[UsedItem]:
    keys = used.get(how) if isinstance(used, dict) else None
    return [key for key in keys if isinstance(key, str | dict)] if isinstance(keys, list) else []


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
