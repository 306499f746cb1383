"""The app's URLs plus one constant JSON view: the ceiling the agent API is compared with, served
by the same gunicorn, through the same middleware (it lives under /api/, so it skips the
browser-only middleware exactly as the API does). Used only by bench/wsgi.py."""

from django.http import HttpRequest, JsonResponse
from django.urls import path

from memoryadmin.urls import urlpatterns as app_urlpatterns


def constant(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"facts": []})


urlpatterns = [path("api/bench/constant", constant), *app_urlpatterns]
