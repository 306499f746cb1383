"""Small response policies that apply to every dynamic page and API answer, and the browser-only
middleware that the agent API skips."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpRequest, HttpResponse, QueryDict
from django.utils.http import http_date

API_PREFIX = "/api/"
NO_STORE = "max-age=0, no-cache, no-store, must-revalidate, private"


def is_api_request(request: HttpRequest) -> bool:
    """The agent API: bearer tokens, JSON, never a session, a cookie or a rendered page."""
    return request.path_info.startswith(API_PREFIX)


class _BrowserOnly:
    """For a middleware that only a browser needs (sessions, the staff user, flash messages):
    under /api/ the request passes straight through. The API authenticates every request with a
    bearer token and never reads a session, so these would only cost time on the agent's hot
    path (and a session could never be created there by mistake). The response policies (CSP,
    no-store, nosniff, Referrer-Policy, X-Frame-Options) still apply to every answer."""

    get_response: Callable[[HttpRequest], Any]

    def __call__(self, request: HttpRequest) -> Any:
        if request.path_info.startswith(API_PREFIX):
            return self.get_response(request)  # a coroutine when the chain is async: awaited up
        return super().__call__(request)  # type: ignore[misc]


class BrowserSessionMiddleware(_BrowserOnly, SessionMiddleware):
    """Django's SessionMiddleware, not run for /api/."""


class BrowserAuthenticationMiddleware(_BrowserOnly, AuthenticationMiddleware):
    """Django's AuthenticationMiddleware (request.user of a staff session), not run for /api/."""


class BrowserMessageMiddleware(_BrowserOnly, MessageMiddleware):
    """Django's MessageMiddleware, not run for /api/."""


class NoStoreMiddleware:
    """`Cache-Control: no-store` on everything the application renders: staff pages, the
    traveller portal and API answers carry personal data that no browser or proxy should keep.
    Static files are answered by WhiteNoise before this middleware and stay cacheable."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not response.has_header("Cache-Control"):
            # What add_never_cache_headers writes when there is no Cache-Control yet, without
            # parsing and merging directives on every answer.
            if not response.has_header("Expires"):
                response.headers["Expires"] = http_date()
            response.headers["Cache-Control"] = NO_STORE
        return response


class StripNulQueryMiddleware:
    """Remove NUL characters from query-string values before a page view reads them.

    PostgreSQL refuses NUL in text, so a search box given `%00` used to end in a 500. NUL has no
    meaning in a search or a filter; dropping it lets every page (and any future one) answer
    normally. Forms are already safe: Django's form fields refuse NUL with a field error.
    The API validates its own query parameters and is left alone."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "%00" in request.META.get("QUERY_STRING", "") and not is_api_request(request):
            cleaned = QueryDict(mutable=True)
            for name, values in request.GET.lists():
                cleaned.setlist(name.replace("\x00", ""), [v.replace("\x00", "") for v in values])
            cleaned._mutable = False
            request.GET = cleaned
        return self.get_response(request)
