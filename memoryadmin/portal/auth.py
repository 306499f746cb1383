"""The portal session: its own cookie, its own table, nothing shared with staff logins.

A view decorated with `portal_session_required` sees `request.portal_subject_id`, the one
traveller the session was opened for. Nothing a request carries (URL, form, header) can name
another traveller: every read and write in the views uses this id.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import add_never_cache_headers

from memoryadmin import db

from .middleware import PORTAL_PREFIX
from .services import portal_session_resume

COOKIE_NAME = "portal_session"


def set_session_cookie(response: HttpResponse, secret: str) -> None:
    """No max-age: the browser drops it when closed; the server ends it after 30 idle minutes."""
    response.set_cookie(
        COOKIE_NAME,
        secret,
        path=PORTAL_PREFIX,
        httponly=True,
        secure=settings.PORTAL_COOKIE_SECURE,
        samesite="Lax",
    )


def clear_session_cookie(response: HttpResponse) -> None:
    response.delete_cookie(COOKIE_NAME, path=PORTAL_PREFIX, samesite="Lax")


def signed_out(request: HttpRequest, *, ended: bool) -> HttpResponse:
    response = render(request, "portal/signed_out.html", {"ended": ended}, status=401)
    if ended:
        clear_session_cookie(response)
    add_never_cache_headers(response)
    return response


def portal_session_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        session, ended = portal_session_resume(request.COOKIES.get(COOKIE_NAME))
        if session is None:
            return signed_out(request, ended=ended)
        request.portal_session = session
        request.portal_subject_id = session.subject_id
        if request.method in ("GET", "HEAD"):
            # Read from a replica that has this traveller's last write (db/replicas.py).
            response = db.page_read(
                lambda: view(request, *args, **kwargs), db.subject_key(session.subject_id)
            )
        else:
            response = view(request, *args, **kwargs)
            # Whatever the traveller changed, their next page reads it back.
            db.written(session.subject_id)
        add_never_cache_headers(response)  # personal data: not for shared caches or back buttons
        return response

    return wrapped
