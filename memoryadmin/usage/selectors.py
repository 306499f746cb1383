"""Reads of use receipts for the staff pages, the portal and the export. Each is one query
whatever the number of receipts (aggregates in the database, joined to facts by row id), so a
page that shows them keeps a fixed number of queries whether a fact was used 5 times or 5,000."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Aggregate, Count, Exists, IntegerField, Max, OuterRef, Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memoryadmin.facts.models import FactEvent, MemoryFact

from .models import MemoryUse, UseHow
from .tables import MEMORY_USE

RECENT_USES = 20
UNUSED_DAYS = 90


@dataclass(frozen=True)
class UseSummary:
    conversations: int = 0  # distinct sessions
    injected: int = 0  # receipts of the fact given in the prompt
    recalled: int = 0  # receipts of the fact returned by a memory tool
    last_used_at: datetime | None = None
    last_version: int | None = None  # the fact's version the agent had in its last use


class _LastVersion(Aggregate):
    """The version of the newest receipt in the group (array_agg ordered, first element)."""

    function = "array_agg"
    template = (
        f'(%(function)s(%(expressions)s ORDER BY "{MEMORY_USE}"."used_at" DESC, '
        f'"{MEMORY_USE}"."id" DESC))[1]'
    )
    output_field = IntegerField()


_AGGREGATES = {
    "conversations": Count("session_tag", distinct=True),
    "injected": Count("id", filter=Q(how=UseHow.INJECTED)),
    "recalled": Count("id", filter=Q(how=UseHow.RECALLED)),
    "last_used_at": Max("used_at"),
    "last_version": _LastVersion("version"),
}


def _summary(row: dict[str, Any]) -> UseSummary:
    return UseSummary(
        conversations=row["conversations"],
        injected=row["injected"],
        recalled=row["recalled"],
        last_used_at=row["last_used_at"],
        last_version=row["last_version"],
    )


def fact_use_summary(fact: MemoryFact) -> UseSummary:
    """One fact's counts and last use (one query)."""
    return _summary(MemoryUse.objects.filter(fact_id=fact.pk).aggregate(**_AGGREGATES))


def fact_recent_uses(fact: MemoryFact, limit: int = RECENT_USES) -> list[MemoryUse]:
    """The last `limit` receipts of one fact, newest first (one query)."""
    return list(MemoryUse.objects.filter(fact_id=fact.pk).order_by("-used_at", "-id")[:limit])


def subject_uses(subject_id: str) -> list[MemoryUse]:
    """Every use receipt still kept for one traveller, oldest first (their download; one
    query). Receipts are kept `use_retention_days`, so the list is bounded."""
    return list(MemoryUse.objects.filter(subject_id=subject_id).order_by("used_at", "id"))


def use_summaries(facts: Iterable[MemoryFact]) -> dict[int, UseSummary]:
    """Fact id -> counts for the given facts (one grouped query; none for no facts)."""
    ids = [fact.pk for fact in facts]
    if not ids:
        return {}
    rows = (
        MemoryUse.objects.filter(fact_id__in=ids)
        .values("fact_id")
        .annotate(**_AGGREGATES)
        .order_by()
    )
    return {row["fact_id"]: _summary(row) for row in rows}


def _used_since(days: int) -> Exists:
    cutoff = timezone.now() - timedelta(days=days)
    return Exists(MemoryUse.objects.filter(fact_id=OuterRef("pk"), used_at__gte=cutoff))


def unused_only(facts: QuerySet[MemoryFact], days: int = UNUSED_DAYS) -> QuerySet[MemoryFact]:
    """Facts older than `days` that the agent had in no turn during the last `days`."""
    cutoff = timezone.now() - timedelta(days=days)
    return facts.filter(created_at__lt=cutoff).exclude(_used_since(days))


def facts_unused_count(days: int = UNUSED_DAYS) -> int:
    """The overview's data-minimisation signal: such facts across all travellers (one query)."""
    return unused_only(MemoryFact.objects.all(), days).count()


def travellers_with_unused(days: int = UNUSED_DAYS, limit: int = 100) -> list[dict[str, Any]]:
    """Travellers holding the most unused facts, with how many (one query)."""
    return list(
        unused_only(MemoryFact.objects.all(), days)
        .values("subject_id")
        .annotate(unused=Count("id"))
        .order_by("-unused", "subject_id")[:limit]
    )


def turn_uses(subject_id: str, session_tag: str, turn_id: str) -> list[MemoryUse]:
    """What the agent had in one turn (one query)."""
    return list(
        MemoryUse.objects.filter(
            subject_id=subject_id, session_tag=session_tag, turn_id=turn_id
        ).order_by("how", "id")
    )


@dataclass(frozen=True)
class Snapshot:
    """A fact as one version of it was recorded in its history: the value (blank once erased,
    and then `erased_on` says when, or once that version alone was redacted: `redacted_on`)."""

    value: str
    sensitive: bool
    erased_on: datetime | None
    redacted_on: datetime | None = None


def versions_had(
    subject_id: str, uses: Iterable[MemoryUse | tuple[str, int]]
) -> dict[tuple[str, int], Snapshot]:
    """(key hash, version) -> the fact as it was at that version, from the history snapshots
    (the `after` of the event that wrote the version), for the receipts (or (key hash,
    version) pairs) given: one query whatever their number, none for none. A version whose
    event has gone (the audit retention) is absent."""
    pairs = (use if isinstance(use, tuple) else (use.key_hash, use.version) for use in uses)
    wanted = {(key_hash, version) for key_hash, version in pairs if version is not None}
    if not wanted:
        return {}
    rows = (
        FactEvent.objects.filter(
            subject_id=subject_id,
            key_hash__in={key_hash for key_hash, _ in wanted},
            after__version__in=sorted({version for _, version in wanted}),
        )
        .order_by("created_at", "id")
        .values_list("key_hash", "after", "redacted_at")
    )
    found: dict[tuple[str, int], Snapshot] = {}
    for key_hash, after, redacted_at in rows:
        version = after.get("version") if isinstance(after, dict) else None
        slot = (key_hash, version)
        if slot in wanted and slot not in found:  # the event that wrote the version
            found[slot] = Snapshot(
                value="" if redacted_at else str(after.get("value") or ""),
                sensitive=bool(after.get("sensitive")),
                erased_on=redacted_at,
                redacted_on=parse_datetime(str(after.get("redacted_at") or "")),
            )
    return found
