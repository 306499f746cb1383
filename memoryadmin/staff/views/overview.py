"""The landing page: today's numbers and the activity chart."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memoryadmin.access import selectors as access_selectors
from memoryadmin.facts import selectors as fact_selectors
from memoryadmin.http_methods import read_only
from memoryadmin.privacy import selectors as privacy_selectors
from memoryadmin.usage import selectors as usage_selectors

from .. import charts, selectors
from ..roles import PRIVACY_ADMIN, VIEWER, has_role
from .common import staff_required


@staff_required(VIEWER)
@read_only
def overview(request: HttpRequest) -> HttpResponse:
    series = selectors.staff_activity_by_day()
    privacy_admin = has_role(request.user, PRIVACY_ADMIN)
    return render(
        request,
        "staff/overview.html",
        {
            "counts": selectors.staff_overview_counts(),
            "series": series,
            "chart": charts.activity_chart(series),
            # Privacy admins see who opened unusually many travellers (one query, theirs only).
            "unusual_access": access_selectors.unusual_access(limit=10) if privacy_admin else None,
            "unusual_limit": settings.STAFF_ACCESS_UNUSUAL_PER_HOUR,
            "unusual_days": settings.STAFF_ACCESS_UNUSUAL_DAYS,
            "narrow_chart": charts.activity_chart(series, width=360, label_every=14),
            "privacy": privacy_selectors.privacy_requests_due_counts(),
            "failing_recipients": privacy_selectors.failing_recipients(),
            "privacy_admin": privacy_admin,  # the recipients' page is theirs: linked for them
            "unused": usage_selectors.facts_unused_count(),
            "unused_days": usage_selectors.UNUSED_DAYS,
            "memory_off": not fact_selectors.memory_enabled(),
        },
    )


@staff_required(VIEWER)
@read_only
def unused(request: HttpRequest) -> HttpResponse:
    """Data minimisation: the travellers holding facts the agent has not used in 90 days."""
    return render(
        request,
        "staff/unused.html",
        {
            "rows": usage_selectors.travellers_with_unused(),
            "total": usage_selectors.facts_unused_count(),
            "unused_days": usage_selectors.UNUSED_DAYS,
        },
    )
