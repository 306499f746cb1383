"""Periodic housekeeping for the agent API."""

from __future__ import annotations

from celery import shared_task

from .idempotency import idempotency_purge_expired


@shared_task(ignore_result=True)
def purge_idempotency_records_task() -> int:
    """Periodic (Celery beat): stored replies past their 24 hours may quote fact values."""
    return idempotency_purge_expired()
