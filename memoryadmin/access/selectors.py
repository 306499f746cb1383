"""Reads of the access record: the privacy admins' page and CSV, "unusual access", and a
traveller's own view of it in the portal."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.db.models.functions import TruncDate, TruncHour
from django.utils import timezone

from .choices import OPENING_KINDS
from .models import StaffAccess


@dataclass(frozen=True)
class AccessFilter:
    staff: str = ""
    subject_id: str = ""
    since: date | None = None
    until: date | None = None  # inclusive


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def access_rows(flt: AccessFilter) -> QuerySet[StaffAccess]:
    rows = StaffAccess.objects.all()
    if flt.staff:
        rows = rows.filter(staff_username=flt.staff)
    if flt.subject_id:
        rows = rows.filter(subject_id=flt.subject_id)
    if flt.since:
        rows = rows.filter(at__gte=_day_start(flt.since))
    if flt.until:
        rows = rows.filter(at__lt=_day_start(flt.until + timedelta(days=1)))
    return rows.order_by("-at", "-id")


def unusual_access(*, since: datetime | None = None, limit: int | None = None) -> list[dict]:
    """Staff members who opened more than STAFF_ACCESS_UNUSUAL_PER_HOUR different travellers
    within one clock hour, newest first (searches only list travellers and do not count)."""
    threshold = settings.STAFF_ACCESS_UNUSUAL_PER_HOUR
    since = since or timezone.now() - timedelta(days=settings.STAFF_ACCESS_UNUSUAL_DAYS)
    rows = (
        StaffAccess.objects.filter(at__gte=since, what__in=OPENING_KINDS)
        .exclude(subject_id="")
        .annotate(hour=TruncHour("at"))
        .values("staff_username", "hour")
        .annotate(travellers=Count("subject_id", distinct=True))
        .filter(travellers__gt=threshold)
        .order_by("-hour", "staff_username")
    )
    return list(rows[: limit or 50])


@dataclass(frozen=True)
class LookedDay:
    """One day of a traveller's "Who has looked": how many times each kind of staff looked."""

    day: date
    support: int  # support agents (viewers and editors)
    privacy: int  # privacy officers (privacy admins, superusers)


# The privacy admins' group: `staff.roles.PRIVACY_ADMIN`, named here since access sits below
# staff (tests/portal/test_requests.py checks the two agree).
PRIVACY_OFFICER_GROUP = "privacy_admin"


def traveller_looks_by_day(subject_id: str, *, limit: int = 30) -> list[LookedDay]:
    """The days, in the current time zone (the traveller's, in the portal), on which staff
    opened this traveller's memory, newest first, with the number of looks by support agents
    and by privacy officers. The kind is the staff account's role today, read from its groups
    (the record keeps no role). One query; no names."""
    user_model = get_user_model()
    officer = Exists(
        user_model.objects.filter(pk=OuterRef("staff_user_id")).filter(
            Q(is_superuser=True) | Q(groups__name=PRIVACY_OFFICER_GROUP)
        )
    )
    rows = (
        StaffAccess.objects.filter(subject_id=subject_id, what__in=OPENING_KINDS)
        .annotate(day=TruncDate("at"), officer=officer)
        .values("day")
        .annotate(
            privacy=Count("id", filter=Q(officer=True)),
            support=Count("id", filter=Q(officer=False)),
        )
        .order_by("-day")
    )
    return [LookedDay(row["day"], row["support"], row["privacy"]) for row in rows[:limit]]
