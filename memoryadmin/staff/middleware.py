"""Staff sessions end after SESSION_COOKIE_AGE seconds without a request (30 minutes).

Django counts the cookie age from the last time the session was saved. Saving it on every
request would add a write to every page, so the expiry is pushed forward at most once a
minute: a user idle for 30 minutes is logged out, give or take that minute."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse

from memoryadmin import db
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


class ReplicaReadsMiddleware:
    """Staff pages read from a read replica (db/replicas.py) when it has replayed both this
    staff user's last change and, on a traveller's pages, that traveller's last write; after any
    change a staff user posts, their next pages read it back. Last in MIDDLEWARE: it calls the
    view itself (to read the page again from the primary if the replica fails under it)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if settings.DATABASE_REPLICAS and request.method not in SAFE and _staff_page(request):
            user = getattr(request, "user", None)
            if user is not None and user.is_authenticated:
                db.written_keys(db.staff_key(user.pk))
        return response

    def process_view(
        self, request: HttpRequest, view: Callable[..., HttpResponse], args: tuple, kwargs: dict
    ) -> HttpResponse | None:
        if not settings.DATABASE_REPLICAS or request.method not in SAFE or not _staff_page(request):
            return None
        user = getattr(request, "user", None)
        keys = [db.staff_key(user.pk)] if user is not None and user.is_authenticated else []
        subject_id = kwargs.get("subject_id")
        if isinstance(subject_id, str):
            keys.append(db.subject_key(subject_id))
        return db.page_read(lambda: view(request, *args, **kwargs), *keys)


SAFE = ("GET", "HEAD")


def _staff_page(request: HttpRequest) -> bool:
    return request.path_info.startswith("/staff/")
