"""The receipts' expiry sweep (beat): one chunk per transaction, re-queued until done."""

from __future__ import annotations

from celery import shared_task

from .services import uses_sweep_expired, uses_take_from_jobs


@shared_task(bind=True, ignore_result=True)
def sweep_uses_task(self) -> int:
    """Periodic: receipts older than the memory settings' use retention go."""
    total = 0
    while True:
        deleted, more = uses_sweep_expired()
        total += deleted
        if not more:
            return total
        if not self.request.is_eager:
            self.apply_async()
            return total


@shared_task(bind=True, ignore_result=True)
def record_waiting_uses_task(self) -> int:
    """Periodic: receipts that rode with posted turns and were not taken by the job's own task
    (a job born skipped has none; one waiting for the broker runs later)."""
    total = 0
    while True:
        written, more = uses_take_from_jobs()
        total += written
        if not more:
            return total
        if not self.request.is_eager:
            self.apply_async()
            return total
