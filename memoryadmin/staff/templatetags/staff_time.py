"""One way to show a moment on the staff pages: relative when recent ("3 minutes ago"), a date
("1 Dec 2026") otherwise, with the exact local time in the tooltip."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils import timezone

register = template.Library()

RECENT = timedelta(days=7)


def _plural(count: int, unit: str) -> str:
    return f"{count} {unit}{'' if count == 1 else 's'} ago"


@register.filter
def relative_time(moment: datetime | None) -> str:
    if moment is None:
        return "—"
    age = timezone.now() - moment
    if age < timedelta(0) or age >= RECENT:
        return day(moment)
    seconds = int(age.total_seconds())
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return _plural(seconds // 60, "minute")
    if seconds < 86400:
        return _plural(seconds // 3600, "hour")
    return _plural(seconds // 86400, "day")


@register.filter
def day(moment: datetime | None) -> str:
    """"1 Dec 2026": no leading zero, the month in three letters."""
    if moment is None:
        return "—"
    local = timezone.localtime(moment)
    return f"{local.day} {local:%b %Y}"


@register.filter
def exact_time(moment: datetime | None) -> str:
    if moment is None:
        return ""
    local = timezone.localtime(moment)
    return f"{day(local)}, {local:%H:%M:%S} {local.tzname()}"
