"""Every write of use receipts: record a batch, sweep the expired, erase with the facts.

A receipt is its own append-only record (who had which fact in which turn), written by the
agent host through the API; recording one writes no FactEvent (that would double every turn's
writes). Each entry point is one statement whatever the batch size."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from memoryadmin.facts.db import is_postgresql
from memoryadmin.facts.erasure import Erased
from memoryadmin.facts.keyhash import history_hashes, key_digest
from memoryadmin.facts.models import MemoryFact
from memoryadmin.facts.selectors import memory_settings
from memoryadmin.facts.services import use_retention_days
from memoryadmin.facts.validation import normalize_key, sanitize_text, session_tag

from .models import TURN_ID_MAX_LENGTH, MemoryUse, UseHow
from .sql import SQL_RECORD_USES, SQL_SWEEP_USES

MAX_KEYS_PER_TURN = 200  # more than any prompt holds; the rest of a longer list is ignored


@dataclass(frozen=True)
class TurnUse:
    """What the agent had in one turn, as the host reports it (keys as it knows them)."""

    session_id: str
    turn_id: str
    injected: Sequence[str] = ()
    recalled: Sequence[str] = ()


def _rows(subject_id: str, uses: Iterable[TurnUse]) -> list[dict[str, str]]:
    """One row per (turn, how, key); each distinct key cleaned and hashed once per batch (a
    burst of turns names the same few facts over and over)."""
    rows: list[dict[str, str]] = []
    keys_seen: dict[str, tuple[str, str]] = {}
    for use in uses:
        tag = session_tag(use.session_id)
        turn = sanitize_text(use.turn_id)[:TURN_ID_MAX_LENGTH]
        for how, keys in ((UseHow.INJECTED, use.injected), (UseHow.RECALLED, use.recalled)):
            seen: set[str] = set()
            for raw in list(keys)[:MAX_KEYS_PER_TURN]:
                if not isinstance(raw, str):
                    continue
                known = keys_seen.get(raw)
                if known is None:
                    key = normalize_key(raw)
                    known = keys_seen[raw] = (key, key_digest(subject_id, key) if key else "")
                key, digest = known
                if not key or key in seen:
                    continue
                seen.add(key)
                rows.append({"key": key, "key_hash": digest,
                             "session_tag": tag, "turn_id": turn, "how": str(how)})
    return rows


def uses_record(*, subject_id: str, uses: Iterable[TurnUse]) -> int:
    """Append the receipts of one or many turns of one traveller: one multi-row INSERT (keys the
    traveller has no fact under are dropped by it). Returns how many rows were offered."""
    rows = _rows(subject_id, uses)
    if not rows:
        return 0
    now = timezone.now()
    if is_postgresql():
        with connection.cursor() as cursor:
            cursor.execute(
                SQL_RECORD_USES, {"subject": subject_id, "now": now, "uses": json.dumps(rows)}
            )
        return len(rows)
    known = dict(MemoryFact.objects.filter(
        subject_id=subject_id, key__in={row["key"] for row in rows}
    ).values_list("key", "id"))
    MemoryUse.objects.bulk_create([
        MemoryUse(subject_id=subject_id, key_hash=row["key_hash"], fact_id=known[row["key"]],
                  session_tag=row["session_tag"], turn_id=row["turn_id"], how=row["how"],
                  used_at=now)
        for row in rows if row["key"] in known
    ])
    return len(rows)


def record_turn_bodies(subject_id: str, turns: Sequence[dict[str, Any]]) -> int:
    """`uses_record` for the client's turn bodies (DjangoMemoryStore.record_uses); a body
    that is not one is skipped, like an unknown key."""
    uses = [
        TurnUse(
            session_id=str(turn.get("session_id") or ""), turn_id=str(turn.get("turn_id") or ""),
            injected=[k for k in turn.get("injected") or () if isinstance(k, str)],
            recalled=[k for k in turn.get("recalled") or () if isinstance(k, str)],
        )
        for turn in turns if isinstance(turn, dict) and turn.get("turn_id")
    ]
    return uses_record(subject_id=subject_id, uses=uses)


def uses_retention_days() -> int:
    """The memory settings' choice, else MEMORY_USE_RETENTION_DAYS."""
    return use_retention_days(memory_settings())


def uses_sweep_expired(*, limit: int = 10_000) -> tuple[int, bool]:
    """Delete one chunk of receipts past `use_retention_days`: (deleted, more left)."""
    cutoff = timezone.now() - timedelta(days=uses_retention_days())
    with transaction.atomic():
        if is_postgresql():
            with connection.cursor() as cursor:
                cursor.execute(SQL_SWEEP_USES, {"cutoff": cutoff, "limit": limit})
                deleted = cursor.rowcount
        else:
            ids = list(MemoryUse.objects.filter(used_at__lt=cutoff)
                       .order_by("used_at").values_list("pk", flat=True)[:limit])
            deleted, _ = MemoryUse.objects.filter(pk__in=ids).delete()
    return deleted, deleted >= limit


def usage_erase_facts(erased: Erased) -> None:
    """Eraser (SQLite path; PostgreSQL runs USAGE_ERASE_FACTS_SQL inside the erasing
    statement): the receipts of the facts that went."""
    for subject_id, key in erased.facts:
        MemoryUse.objects.filter(
            subject_id=subject_id, key_hash__in=history_hashes(subject_id, key)
        ).delete()


def usage_erase_subjects(erased: Erased) -> None:
    """Eraser for "forget everything": every receipt of the traveller."""
    if erased.cleared_subjects:
        MemoryUse.objects.filter(subject_id__in=erased.cleared_subjects).delete()
