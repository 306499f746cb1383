"""Writes to the access record other than the batched writer: the retention sweep, the only
path by which rows ever leave the table."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from .models import StaffAccess
from .sql import SQL_SWEEP_MODE

logger = logging.getLogger("memoryadmin.access")
SWEEP_CHUNK = 5000


def access_retention_cutoff(now: datetime) -> datetime:
    """Rows of the record written before this time are past STAFF_ACCESS_RETENTION_DAYS."""
    return now - timedelta(days=settings.STAFF_ACCESS_RETENTION_DAYS)


def access_sweep(*, actor: str, now: datetime | None = None, chunk: int = SWEEP_CHUNK) -> int:
    """Delete one chunk of rows older than STAFF_ACCESS_RETENTION_DAYS (one transaction);
    returns how many went, so the caller repeats until 0. `actor` names who swept (logged)."""
    cutoff = access_retention_cutoff(now or timezone.now())
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(SQL_SWEEP_MODE)
        ids = list(
            StaffAccess.objects.filter(at__lt=cutoff)
            .order_by("at")
            .values_list("id", flat=True)[:chunk]
        )
        deleted, _ = StaffAccess.objects.filter(id__in=ids).delete()
    if deleted:
        logger.info("staff access record: %s swept %d rows older than %s", actor, deleted, cutoff)
    return deleted
