"""Staff sessions end after SESSION_COOKIE_AGE seconds without a request (30 minutes).

Django counts the cookie age from the last time the session was saved. Saving it on every
request would add a write to every page, so the expiry is pushed forward at most once a
minute: a user idle for 30 minutes is logged out, give or take that minute."""

from __future__ import annotations

import time
from collections.abc import Callable
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from memoryadmin.middleware import is_api_request

TOUCHED = "_idle_touched"
REFRESH_SECONDS = 60


class IdleTimeoutMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if is_api_request(request):  # bearer tokens, no session to keep alive
            return self.get_response(request)
        response = self.get_response(request)
        session = getattr(request, "session", None)
        user = getattr(request, "user", None)
        # Staff accounts only: an agent's service token (the API's request.user) has no session,
        # and touching one would create a session row and a cookie on every agent host.
        if session is not None and isinstance(user, AbstractBaseUser) and user.is_authenticated:
            now = int(time.time())
            if now - session.get(TOUCHED, 0) >= REFRESH_SECONDS:
                session[TOUCHED] = now  # marks the session modified: saved, expiry renewed
        return response


@receiver(user_logged_in)
def _touch_on_login(sender, request, user, **kwargs) -> None:
    """The login saves the session anyway; record the time so the next page need not."""
    if request is not None and hasattr(request, "session"):
        request.session[TOUCHED] = int(time.time())


class StaffTimeZoneMiddleware:
    """Staff pages show times in STAFF_TIME_ZONE (default TIME_ZONE), named once per page
    (`staff/_zone.html`); the portal keeps the traveller's own zone."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.zone = ZoneInfo(settings.STAFF_TIME_ZONE)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/staff/"):
            return self.get_response(request)
        timezone.activate(self.zone)
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()
