"""The legal clock of a privacy request: one calendar month (GDPR Art. 12(3)), counted in the
airline's one time zone (`TIME_ZONE`), extendable by up to two further months.

A month after 31 January is the last day of February: when the later month has no such day, the
period ends on its last day (Regulation 1182/71, Art. 3(2)(c), which Art. 12(3) is read with).
"""

from __future__ import annotations

import calendar
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.utils import timezone

MAX_EXTENSION_MONTHS = 2


def airline_zone() -> ZoneInfo:
    """The one zone (`TIME_ZONE`): the airline's calendar days are the ones every page shows."""
    return ZoneInfo(settings.TIME_ZONE)


def add_months(day: date, months: int) -> date:
    """The same day `months` later, or that month's last day if it is shorter."""
    index = day.month - 1 + months
    year, month = day.year + index // 12, index % 12 + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def received_day(received_at: datetime) -> date:
    """The day a request was received, as the airline's calendar says."""
    return timezone.localtime(received_at, airline_zone()).date()


def due_on(received: date | datetime, *, extension_months: int = 0) -> date:
    """The last day to answer: one calendar month after the day of receipt (a moment counts
    as its day in the airline's zone), plus any extension."""
    if not 0 <= extension_months <= MAX_EXTENSION_MONTHS:
        raise ValueError("An extension is one or two further months.")
    day = received_day(received) if isinstance(received, datetime) else received
    return add_months(day, 1 + extension_months)


def today() -> date:
    return timezone.localtime(timezone.now(), airline_zone()).date()


def deadline(day: date) -> datetime:
    """The moment a due day ends in the airline's time zone (the end of the last day)."""
    return datetime.combine(day + timedelta(days=1), time.min, tzinfo=airline_zone())


def day_start(day: date) -> datetime:
    """Midnight at the start of `day` in the airline's zone (date ranges of the CSV)."""
    return datetime.combine(day, time.min, tzinfo=airline_zone())
