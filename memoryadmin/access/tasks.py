"""Celery: the daily retention sweep of the access record."""

from __future__ import annotations

from celery import shared_task

from .services import access_sweep


@shared_task
def sweep_access_record() -> int:
    total = 0
    while True:
        swept = access_sweep(actor="system:access-retention")
        total += swept
        if not swept:
            return total
