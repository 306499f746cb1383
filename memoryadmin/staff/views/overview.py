"""The landing page: today's numbers and the activity chart."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memoryadmin.usage import selectors as usage_selectors

from .. import charts, selectors
from ..roles import VIEWER
from .common import staff_required


@staff_required(VIEWER)
def overview(request: HttpRequest) -> HttpResponse:
    series = selectors.staff_activity_by_day()
    return render(
        request,
        "staff/overview.html",
        {
            "counts": selectors.staff_overview_counts(),
            "series": series,
            "chart": charts.activity_chart(series),
            "unused": usage_selectors.facts_unused_count(),
            "unused_days": usage_selectors.UNUSED_DAYS,
        },
    )


@staff_required(VIEWER)
def unused(request: HttpRequest) -> HttpResponse:
    """Data minimisation: the travellers holding facts the agent has not used in 90 days."""
    return render(request, "staff/unused.html", {
        "rows": usage_selectors.travellers_with_unused(),
        "total": usage_selectors.facts_unused_count(),
        "unused_days": usage_selectors.UNUSED_DAYS,
    })
