"""Retention enforcement on Celery: each task does one chunk in one transaction and re-queues
itself until nothing is left, so a killed worker loses at most the chunk it was in (rolled back)
and the next run carries on. Run eagerly (no broker), a task loops instead of re-queuing."""

from __future__ import annotations

import logging
from collections.abc import Callable

from celery import shared_task
from django.conf import settings

from memoryadmin import db

from . import services

logger = logging.getLogger(__name__)


def _chunks(task, step: Callable[[], services.ChunkResult], name: str) -> int:
    """Run one chunk; then re-queue (worker) or loop (eager) while there is more."""
    total = 0
    while True:
        result = step()
        total += result.done
        if not result.more:
            if total:
                logger.info("%s: %d done", name, total)
            return total
        if not task.request.is_eager:
            task.apply_async(countdown=settings.RETENTION_SWEEP_PAUSE_SECONDS)
            logger.info("%s: %d done, more queued", name, total)
            return total


@shared_task(bind=True, ignore_result=True)
def sweep_expired(self) -> int:
    """Periodic (beat, RETENTION_SWEEP_INTERVAL_SECONDS): erase expired facts."""
    size = settings.RETENTION_SWEEP_CHUNK_SIZE
    return _chunks(self, lambda: services.facts_sweep_expired(limit=size), "sweep_expired")


@shared_task(bind=True, ignore_result=True)
def sweep_audit(self) -> int:
    """Periodic (beat, AUDIT_SWEEP_INTERVAL_SECONDS): drop history past the audit retention."""
    size = settings.RETENTION_SWEEP_CHUNK_SIZE
    return _chunks(self, lambda: services.events_sweep_old(limit=size), "sweep_audit")


@shared_task(bind=True, ignore_result=True)
def recompute_expiry(self, run_id: int) -> str:
    """After a rule change: walk every governed fact and give it the expiry the rules now give.
    When it is done, a sweep erases what the change expired."""
    size = settings.RETENTION_SWEEP_CHUNK_SIZE
    while True:
        run = services.retention_recompute_chunk(run_id=run_id, limit=size)
        if run.is_finished:
            if run.done:
                sweep_expired.delay()
            return run.status
        if not self.request.is_eager:
            self.apply_async((run_id,), countdown=settings.RETENTION_SWEEP_PAUSE_SECONDS)
            return run.status


@shared_task(ignore_result=True)
def partitions_upkeep_task() -> dict[str, object]:
    """Periodic (beat, hourly): the month partitions of the append-only tables exist one month
    ahead, rows that landed in a default partition are in their month's, closed months
    have their keep index, and every month past its table's retention is dropped, its kept rows
    kept (`partitions`)."""
    made = db.partitions_upkeep()
    indexed = db.closed_months_index()
    dropped = db.retention_by_month()
    return {"made": made, "indexed": indexed, "dropped": dropped}
