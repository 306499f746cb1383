"""Periodic housekeeping for the portal."""

from __future__ import annotations

from celery import shared_task

from .services import portal_purge_stale


@shared_task(ignore_result=True)
def purge_stale_portal_rows_task() -> tuple[int, int]:
    """Periodic (Celery beat): spent links and ended sessions are of no use after a day."""
    return portal_purge_stale()
