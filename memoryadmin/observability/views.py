"""`GET /metrics`: the Prometheus text format, for the allowed networks or the bearer token
(`access.py`); 403 for anyone else."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from . import exposition
from .access import metrics_allowed


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not metrics_allowed(
        remote_addr=request.META.get("REMOTE_ADDR", ""),
        authorization=request.META.get("HTTP_AUTHORIZATION", ""),
        networks=settings.METRICS_ALLOWED_NETWORKS,
        token=settings.METRICS_TOKEN,
    ):
        return HttpResponse("Forbidden\n", status=403, content_type="text/plain; charset=utf-8")
    return HttpResponse(
        exposition.render(with_database_gauges=True), content_type=CONTENT_TYPE_LATEST
    )
