"""Retention at work: the sweeps of expired facts and old history, and the expiry recompute a
rule change starts. The policy changes themselves (settings, rules) are in `policy.py`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from .. import erasure, retention, sql
from ..actors import Actor
from ..counting import count_erased
from ..models import (
    ActorKind,
    EventAction,
    MemoryFact,
    MemorySettings,
    RetentionRun,
    RunStatus,
)
from .history import (
    matching_rule,
)

PINNED_EXPIRY_ACTOR = Actor(ActorKind.RETENTION, "rule:expiry date set by a person")


@dataclass(frozen=True)
class ChunkResult:
    done: int
    more: bool


@transaction.atomic
def facts_sweep_expired(*, limit: int = 1000, now: datetime | None = None) -> ChunkResult:
    """Erase up to `limit` expired facts of travellers without a legal hold, through the one
    erasure path, each with the rule that expired it as actor. Rows are taken with
    FOR UPDATE SKIP LOCKED, so sweeps running at once never erase the same fact twice."""
    now = now or timezone.now()
    rows = list(
        MemoryFact.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(expires_at__lte=now, subject__legal_hold=False)
        .order_by()
        .values_list("subject_id", "key", "category", "sensitive", "expiry_pinned")[:limit]
    )
    if not rows:
        return ChunkResult(done=0, more=False)
    rules = retention.enabled_rules()
    actors: dict[tuple[str, str, bool], Actor] = {}  # a chunk repeats the same topics
    doomed = []
    for subject_id, key, category, sensitive, pinned in rows:
        actor = PINNED_EXPIRY_ACTOR
        if not pinned:
            topic = (key, category, sensitive)
            if topic not in actors:
                rule = matching_rule(rules, key=key, category=category, sensitive=sensitive)
                actors[topic] = PINNED_EXPIRY_ACTOR if rule is None else Actor.retention(rule)
            actor = actors[topic]
        doomed.append((subject_id, key, actor))
    erased = erasure.erase_facts(
        doomed, action=EventAction.DELETED, reason="Expired under the retention policy."
    )
    count_erased("retention_sweep", erased)
    return ChunkResult(done=erased, more=len(rows) == limit)


def events_retention_cutoff(now: datetime) -> datetime:
    """History written before this time is past the audit retention (memory settings)."""
    row = MemorySettings.objects.filter(pk=1).first() or MemorySettings()  # uncached: a policy
    return now - timedelta(days=row.audit_retention_days)


@transaction.atomic
def events_sweep_old(*, limit: int = 1000, now: datetime | None = None) -> ChunkResult:
    """Delete history older than the audit retention (memory settings), except what outlives
    it: a held traveller's (a hold preserves the record) and a live fact's events. The rule is
    the drop by month's (`sql.EVENTS_KEPT_PAST_RETENTION`), so the two never disagree."""
    cutoff = events_retention_cutoff(now or timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(sql.SQL_SWEEP_EVENTS, {"cutoff": cutoff, "limit": limit})
        deleted = cursor.rowcount
    return ChunkResult(done=deleted, more=deleted == limit)


@transaction.atomic
def retention_recompute_chunk(*, run_id: int, limit: int = 1000) -> RetentionRun:
    """Give the next `limit` governed facts (by primary key) the expiry today's rules give them.
    A newer run makes this one stop: it will cover every fact with the newer rules anyway."""
    run = RetentionRun.objects.select_for_update().get(pk=run_id)
    if run.is_finished:
        return run
    if RetentionRun.objects.filter(pk__gt=run.pk).exists():
        run.status = RunStatus.SUPERSEDED
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "finished_at"])
        return run
    ids = list(
        retention.governed_facts()
        .filter(pk__gt=run.last_pk)
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )
    if ids:
        MemoryFact.objects.filter(pk__in=ids).update(
            expires_at=retention.expiry_expression(retention.enabled_rules())
        )
        run.done += len(ids)
        run.last_pk = ids[-1]
        run.status = RunStatus.RUNNING
    if len(ids) < limit:
        run.status = RunStatus.DONE
        run.total = max(run.total, run.done)
        run.finished_at = timezone.now()
    run.save(update_fields=["done", "last_pk", "status", "total", "finished_at"])
    return run
