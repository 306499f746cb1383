"""How dates read on the portal (memoryadmin/formats/en): "5 December 2026" and
"5 December 2026 at 14:30" in English, through Django's own `date_format` and the template
filter the portal's templates use; Chinese keeps Django's format. Settings only, no database."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from django.template import Context, Template
from django.utils import translation
from django.utils.formats import date_format
from hypothesis import given
from hypothesis import strategies as st

pytestmark = pytest.mark.unit

MOMENT = datetime(2026, 12, 5, 14, 30, tzinfo=UTC)
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


def test_an_english_day_and_moment_read_as_gov_uk_writes_them():
    with translation.override("en"):
        assert date_format(date(2026, 12, 5)) == "5 December 2026"
        assert date_format(MOMENT, "DATETIME_FORMAT") == "5 December 2026 at 14:30"
        assert date_format(date(2026, 12, 5), "MONTH_DAY_FORMAT") == "5 December"
        assert date_format(date(2026, 12, 5), "YEAR_MONTH_FORMAT") == "December 2026"


def test_the_portal_templates_filter_renders_the_same_in_the_current_time_zone(settings):
    settings.TIME_ZONE = "Asia/Taipei"  # 14:30 UTC is 22:30 there, the same day
    template = Template('{{ when|date:"DATETIME_FORMAT" }} / {{ when|date:"DATE_FORMAT" }}')
    with translation.override("en"):
        shown = template.render(Context({"when": MOMENT}))
    assert shown == "5 December 2026 at 22:30 / 5 December 2026"


def test_chinese_keeps_djangos_own_format():
    with translation.override("zh-hant"):
        assert date_format(date(2026, 12, 5)) == "2026年12月5日"


@given(st.dates(min_value=date(1900, 1, 1), max_value=date(2999, 12, 31)))
def test_every_day_is_day_month_name_and_year_without_padding(day):
    with translation.override("en"):
        assert date_format(day) == f"{day.day} {MONTHS[day.month - 1]} {day.year}"


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)))
def test_every_moment_is_on_the_24_hour_clock(moment):
    with translation.override("en"):
        shown = date_format(moment, "DATETIME_FORMAT")
    assert shown == (
        f"{moment.day} {MONTHS[moment.month - 1]} {moment.year} at {moment:%H}:{moment:%M}"
    )
