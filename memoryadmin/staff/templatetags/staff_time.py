"""One way to show a moment on the staff pages: relative when recent ("3 minutes ago", "in 2
hours"), a date ("1 Dec 2026") otherwise, with the exact local time in the tooltip. Every staff
page and view prints moments through these filters (or `staff/_when.html`), so there is one
format to learn; the words are translatable, and a Chinese page reads "3 分鐘前",
"2026年12月1日"."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from django import template
from django.utils import timezone, translation
from django.utils.translation import gettext, ngettext

register = template.Library()

RECENT = timedelta(days=7)


def _chinese() -> bool:
    return (translation.get_language() or "").lower().startswith("zh")


def _ago(count: int, unit: str) -> str:
    if unit == "minute":
        return ngettext("%(n)d minute ago", "%(n)d minutes ago", count) % {"n": count}
    if unit == "hour":
        return ngettext("%(n)d hour ago", "%(n)d hours ago", count) % {"n": count}
    return ngettext("%(n)d day ago", "%(n)d days ago", count) % {"n": count}


def _ahead(count: int, unit: str) -> str:
    if unit == "minute":
        return ngettext("in %(n)d minute", "in %(n)d minutes", count) % {"n": count}
    if unit == "hour":
        return ngettext("in %(n)d hour", "in %(n)d hours", count) % {"n": count}
    return ngettext("in %(n)d day", "in %(n)d days", count) % {"n": count}


@register.filter
def relative_time(moment: datetime | None) -> str:
    """Within a week either side of now: words; further: the day."""
    if moment is None:
        return "—"
    age = timezone.now() - moment
    if abs(age) >= RECENT:
        return day(moment)
    seconds = int(abs(age).total_seconds())
    if seconds < 60:
        return gettext("just now")
    say = _ago if age >= timedelta(0) else _ahead
    if seconds < 3600:
        return say(seconds // 60, "minute")
    if seconds < 86400:
        return say(seconds // 3600, "hour")
    return say(seconds // 86400, "day")


@register.filter
def day(moment: datetime | date | None) -> str:
    """ "1 Dec 2026": no leading zero, the month in three letters (a moment in the site's local
    time zone; a plain date as it is)."""
    if moment is None or moment == "":
        return "—"
    local = timezone.localtime(moment) if isinstance(moment, datetime) else moment
    if _chinese():
        return f"{local.year}年{local.month}月{local.day}日"
    return f"{local.day} {local:%b %Y}"


@register.filter
def exact_time(moment: datetime | None) -> str:
    """The full local time, for tooltips and history tables: "1 Dec 2026, 14:05:09 UTC+01:00"."""
    if moment is None:
        return ""
    local = timezone.localtime(moment)
    return f"{day(local)}, {local:%H:%M:%S} {_offset(local)}"


def _offset(local: datetime) -> str:
    """ "UTC" or "UTC+08:00": an abbreviation such as "CST" names China's, Taiwan's and
    America's Central time alike."""
    offset = local.strftime("%z")
    if offset in ("", "+0000"):
        return "UTC"
    return f"UTC{offset[:3]}:{offset[3:]}"


@register.filter
def local_time(moment: datetime | None) -> str:
    """The full local time without its zone, for a table whose page names the zone once
    (`staff/_zone.html`): "1 Dec 2026, 14:05:09"."""
    if moment is None:
        return "—"
    local = timezone.localtime(moment)
    return f"{day(local)}, {local:%H:%M:%S}"


@register.simple_tag
def zone_name() -> str:
    """The zone times are shown in, named once per page: "Asia/Taipei (UTC+08:00)", "UTC"."""
    name = timezone.get_current_timezone_name()
    offset = _offset(timezone.localtime(timezone.now()))
    return name if name in ("UTC", offset) else f"{name} ({offset})"


@register.filter
def hour(moment: datetime | None) -> str:
    """An hour bucket: "1 Dec 2026, 14:00"."""
    if moment is None:
        return "—"
    local = timezone.localtime(moment)
    return f"{day(local)}, {local:%H}:00"
