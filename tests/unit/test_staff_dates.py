"""One date format on every staff page (issue 23): relative words with the exact local time in
a tooltip, days as "1 Dec 2026". The filters, and a scan that no staff template prints a moment
another way (a machine format may only stand inside a tag: `datetime="…"`, a link's query)."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.template.loader import render_to_string
from django.utils import timezone, translation

from memoryadmin.staff.templatetags.staff_time import day, exact_time, hour, relative_time

pytestmark = pytest.mark.unit

TEMPLATES = Path(settings.BASE_DIR) / "templates"
DATE_FILTER = re.compile(r"\|date:(['\"])(?P<format>[^'\"]*)\1")


def test_recent_moments_read_as_words_either_side_of_now():
    now = timezone.now()
    assert relative_time(now - timedelta(seconds=5)) == "just now"
    assert relative_time(now - timedelta(minutes=1, seconds=2)) == "1 minute ago"
    assert relative_time(now - timedelta(minutes=3, seconds=2)) == "3 minutes ago"
    assert relative_time(now - timedelta(hours=5, seconds=2)) == "5 hours ago"
    assert relative_time(now - timedelta(days=2, seconds=2)) == "2 days ago"
    assert relative_time(now + timedelta(hours=2, seconds=30)) == "in 2 hours"
    assert relative_time(now - timedelta(days=40)) == day(now - timedelta(days=40))
    assert relative_time(None) == "—"


def test_days_and_exact_times_have_one_shape():
    moment = datetime(2026, 12, 1, 13, 5, 9, tzinfo=ZoneInfo("UTC"))
    assert day(moment) == "1 Dec 2026"
    assert day(date(2026, 3, 9)) == "9 Mar 2026"
    assert exact_time(moment) == "1 Dec 2026, 13:05:09 UTC"
    assert hour(moment) == "1 Dec 2026, 13:00"
    with timezone.override("Asia/Taipei"):
        assert exact_time(moment) == "1 Dec 2026, 21:05:09 UTC+08:00"  # not "CST"


def test_the_same_words_in_chinese():
    now = timezone.now()
    with translation.override("zh-hant"):
        assert day(date(2026, 12, 1)) == "2026年12月1日"
        assert relative_time(now - timedelta(seconds=5)) == "剛剛"
        assert relative_time(now - timedelta(minutes=3, seconds=2)) == "3 分鐘前"
        assert relative_time(now + timedelta(days=2, seconds=30)) == "2 天後"


def test_the_shared_include_gives_the_exact_time_in_a_tooltip():
    moment = timezone.now() - timedelta(minutes=3, seconds=2)
    html = render_to_string("staff/_when.html", {"moment": moment})
    assert f'title="{exact_time(moment)}"' in html and ">3 minutes ago</time>" in html
    assert render_to_string("staff/_when.html", {"moment": None}) == "—"


def _outside_tags(text: str, position: int) -> bool:
    opened, closed = text.rfind("<", 0, position), text.rfind(">", 0, position)
    return closed >= opened


@pytest.mark.parametrize(
    "path", sorted((TEMPLATES / "staff").rglob("*.html")), ids=lambda p: p.name
)
def test_no_staff_template_prints_a_moment_another_way(path):
    text = path.read_text()
    for match in DATE_FILTER.finditer(text):
        assert not _outside_tags(text, match.start()), (
            f"{path.name}: {match.group(0)} prints a date; use staff/_when.html or |day"
        )


def test_the_policy_history_shows_dates_in_the_same_format():
    from memoryadmin.staff.templatetags.policy_format import policy_value

    assert policy_value("2027-01-02") == "2 Jan 2027"
    assert policy_value("2026-12-01T13:05:09+00:00") == "1 Dec 2026, 13:05:09 UTC"
    assert policy_value("2026-13-45") == "2026-13-45"  # not a date: as written
    assert policy_value("Trip context") == "Trip context"
