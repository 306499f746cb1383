"""The calendar-month rule of GDPR Art. 12(3), in the airline's time zone."""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

from memoryadmin.privacy import clock

pytestmark = pytest.mark.unit

TAIPEI = ZoneInfo("Asia/Taipei")


def at(day: date, hour: int = 10) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=TAIPEI)


@pytest.mark.parametrize(
    ("received", "due"),
    [
        (date(2027, 1, 31), date(2027, 2, 28)),  # no 31 February: the month's last day
        (date(2028, 1, 31), date(2028, 2, 29)),  # a leap year
        (date(2028, 1, 30), date(2028, 2, 29)),
        (date(2027, 1, 28), date(2027, 2, 28)),
        (date(2027, 3, 15), date(2027, 4, 15)),
        (date(2027, 3, 31), date(2027, 4, 30)),
        (date(2027, 5, 31), date(2027, 6, 30)),
        (date(2027, 12, 15), date(2028, 1, 15)),  # over the year's end
        (date(2027, 12, 31), date(2028, 1, 31)),
        (date(2027, 2, 28), date(2027, 3, 28)),  # February's last day maps to the 28th, not 31st
    ],
)
def test_due_one_calendar_month_after_receipt(received, due):
    assert clock.due_on(at(received)) == due


def test_the_day_is_the_airlines_not_utc(settings):
    settings.TIME_ZONE = "Asia/Taipei"
    # 20:00 UTC on 31 January is 04:00 on 1 February in Taipei: due 1 March.
    received = datetime(2027, 1, 31, 20, 0, tzinfo=ZoneInfo("UTC"))
    assert clock.due_on(received) == date(2027, 3, 1)


@pytest.mark.parametrize(
    ("received", "months", "due"),
    [
        (date(2027, 1, 31), 1, date(2027, 3, 31)),
        (date(2027, 1, 31), 2, date(2027, 4, 30)),
        (date(2027, 11, 30), 2, date(2028, 2, 29)),  # into a leap February
        (date(2027, 3, 15), 2, date(2027, 6, 15)),
    ],
)
def test_an_extension_adds_further_months_from_receipt(received, months, due):
    assert clock.due_on(at(received), extension_months=months) == due


@pytest.mark.parametrize("months", [-1, 3])
def test_an_extension_is_one_or_two_months(months):
    with pytest.raises(ValueError):
        clock.due_on(at(date(2027, 1, 1)), extension_months=months)


def test_the_deadline_is_the_end_of_the_due_day_in_taipei(settings):
    settings.TIME_ZONE = "Asia/Taipei"
    end = clock.deadline(date(2027, 2, 28))
    assert end == datetime(2027, 3, 1, 0, 0, tzinfo=TAIPEI)
    assert end.astimezone(ZoneInfo("UTC")).hour == 16
