"""The app's URLs plus two reference JSON views: the ceiling the agent API is compared with, and
that ceiling with one database round trip. Served by the same gunicorn, through the same
middleware (they live under /api/, so they skip the browser-only middleware exactly as the API
does). Used only by bench/wsgi.py."""

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path

from memoryadmin.api.views import TierOneView
from memoryadmin.urls import urlpatterns as app_urlpatterns


def constant(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"facts": []})


def one_query(request: HttpRequest) -> HttpResponse:
    """The constant answer after one trivial statement: what any read of the database costs a
    request on top of the constant view, whatever the statement (the floor of tier one)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return JsonResponse({"facts": []})


urlpatterns = [
    path("api/bench/constant", constant),
    # Tier one outside /api/v1/: the same view and middleware, but not recorded in the metrics
    # (memoryadmin_agent_request_seconds): what recording costs a tier-one read (scenario 1).
    path("api/bench/unrecorded/subjects/<subject_id:subject_id>/tier-one", TierOneView.as_view()),
    path("api/bench/one-query", one_query),
    *app_urlpatterns,
]
