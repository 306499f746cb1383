"""The app's URLs plus two reference JSON views: the ceiling the agent API is compared with, and
that ceiling with one database round trip. Served by the same gunicorn, through the same
middleware (they live under /api/, so they skip the browser-only middleware exactly as the API
does). Used only by bench/wsgi.py."""

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path

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
    path("api/bench/one-query", one_query),
    *app_urlpatterns,
]
