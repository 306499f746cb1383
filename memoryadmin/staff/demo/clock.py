"""The demo's story clock: five weeks of a traveller's life, replayed in a second.

Every service takes its time from `django.utils.timezone.now()`, as it would have over those
weeks. While the seed runs, that clock reads the story's time instead (set step by step with
`at`), so every row a step writes (fact events and versions, extraction jobs, use receipts,
privacy requests and their deliveries, staff looks) carries the time the step happened. Each
reading moves on by a millisecond, so rows keep the order they were written in. Demo data only:
the clock is put back when the seed ends, whatever happens.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.utils import timezone

TICK = timedelta(milliseconds=1)


class StoryClock:
    def __init__(self, today: datetime, start: datetime) -> None:
        self.today = today
        self._at = start

    def day(self, days_ago: float, hour: float) -> datetime:
        """`hour` o'clock of the day `days_ago` before today, in the airline's time zone (the
        demo's travellers chat by day there)."""
        local = timezone.localtime(self.today, timezone.get_default_timezone())
        midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
        return midnight - timedelta(days=days_ago) + timedelta(hours=hour)

    def set(self, when: datetime) -> None:
        """Move on to `when`: never back (a step due earlier goes on from the last one), never
        past the real now."""
        self._at = min(max(when, self._at), self.today)

    def now(self) -> datetime:
        self._at = min(self._at + TICK, self.today)
        return self._at


@contextmanager
def story_clock(*, days: int = 36) -> Iterator[StoryClock]:
    """Set Django's clock to the start of the story (`days` ago) for the block."""
    real_now = timezone.now
    today = real_now()
    clock = StoryClock(today, today - timedelta(days=days))
    timezone.now = clock.now
    try:
        yield clock
    finally:
        timezone.now = real_now
