"""Load many facts fast for size tests (10,000 to 200,000 rows), with PostgreSQL COPY.

This deliberately bypasses facts.services, like bench data generators do: it sets up data for a
test of what happens *next* (a sweep, a preview), and writing 200,000 facts one service call at a
time would take minutes. COPY goes through psycopg directly, so the write guard in
tests/conftest.py (which watches Django's executed SQL) does not see it. Never use it to test a
write path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import connection
from django.utils import timezone


@dataclass(frozen=True)
class Row:
    subject_id: str
    key: str
    value: str
    category: str = "preference"
    sensitive: bool = False
    updated_at: datetime | None = None
    expires_at: datetime | None = None
    expiry_pinned: bool = False


def load_facts(rows: Iterable[Row], *, held: Iterable[str] = ()) -> int:
    """COPY the facts (and their travellers) in; returns how many facts went in."""
    rows = list(rows)
    now = timezone.now()
    held = set(held)
    subjects = sorted({row.subject_id for row in rows})
    with connection.cursor() as wrapper:
        raw = wrapper.cursor
        with raw.copy(
            "COPY memory_subject (subject_id, purge_generation, memory_paused, "
            "memory_use_paused, legal_hold, created_at, updated_at) FROM STDIN"
        ) as copy:
            for subject_id in subjects:
                copy.write_row((subject_id, 0, False, False, subject_id in held, now, now))
        with raw.copy(
            "COPY memory_fact (subject_id, key, value, category, updated_at, changed_at, "
            "source_session_id, created_at, origin, status, sensitive, expires_at, "
            "expiry_pinned, version) "
            "FROM STDIN"
        ) as copy:
            for row in rows:
                updated = row.updated_at or now
                copy.write_row(
                    (
                        row.subject_id,
                        row.key,
                        row.value,
                        row.category,
                        updated,
                        updated,
                        "",
                        updated,
                        "import",
                        "active",
                        row.sensitive,
                        row.expires_at,
                        row.expiry_pinned,
                        1,
                    )
                )
    return len(rows)
