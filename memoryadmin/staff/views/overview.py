"""The landing page: today's numbers and the activity chart."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memoryadmin.privacy import selectors as privacy_selectors

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
            "privacy": privacy_selectors.privacy_requests_due_counts(),
            "failing_recipients": privacy_selectors.failing_recipients(),
        },
    )
