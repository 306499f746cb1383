"""The app's URLs plus one constant JSON view: the ceiling the agent API is compared with, served
by the same gunicorn, through the same middleware. Used only by bench/wsgi.py."""

from django.http import HttpRequest, JsonResponse
from django.urls import path

from memoryadmin.urls import urlpatterns as app_urlpatterns


def constant(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"facts": []})


urlpatterns = [path("bench/constant", constant), *app_urlpatterns]
