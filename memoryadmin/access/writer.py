"""The batched writer: rows are buffered while a request runs and written after its response,
with one multi-row INSERT, so a staff page pays no round trip for its own record.

The buffer is per thread (a WSGI request runs on one thread from start to `request_finished`,
which the server sends once the response has been delivered). `request_started` empties it, so a
request never writes rows another left behind. Code outside a request (a shell, a task) calls
`flush()` itself. A failed write is logged with its row count only (never a traveller id) and
does not reach the user, whose page was already sent.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import DatabaseError
from django.utils import timezone

from .choices import AccessKind
from .models import StaffAccess

logger = logging.getLogger("memoryadmin.access")
_local = threading.local()


def _buffer() -> list[StaffAccess]:
    rows = getattr(_local, "rows", None)
    if rows is None:
        rows = _local.rows = []
    return rows


def record(
    *,
    staff_user_id: int | None,
    staff_username: str,
    what: AccessKind | str,
    subject_ids: Iterable[str],
    address: str | None,
    login_method: str = "",
) -> int:
    """Buffer one row per traveller (a traveller listed twice counts once). Returns how many."""
    if not settings.STAFF_ACCESS_RECORDING:
        return 0
    now = timezone.now()
    rows = _buffer()
    added = 0
    for subject_id in dict.fromkeys(subject_ids):
        rows.append(
            StaffAccess(
                at=now,
                staff_user_id=staff_user_id,
                staff_username=staff_username[:150],
                subject_id=subject_id,
                what=str(what),
                login_method=login_method,
                address=address or None,
            )
        )
        added += 1
    return added


def pending() -> int:
    return len(_buffer())


def flush() -> int:
    """Write what is buffered in one INSERT; returns the number of rows written."""
    rows = _buffer()
    if not rows:
        return 0
    _local.rows = []
    try:
        StaffAccess.objects.bulk_create(rows)
    except DatabaseError:
        logger.exception("staff access record: %d rows could not be written", len(rows))
        return 0
    return len(rows)


def _discard(**_: Any) -> None:
    _local.rows = []


def _flush_after_response(**_: Any) -> None:
    flush()


def connect() -> None:
    request_started.connect(_discard, dispatch_uid="access-writer-discard")
    request_finished.connect(_flush_after_response, dispatch_uid="access-writer-flush")
