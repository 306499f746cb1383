"""Small response policies that apply to every dynamic page and API answer, and the browser-only
middleware that the agent API skips."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
    QueryDict,
)
from django.utils.http import http_date

API_PREFIX = "/api/"
_PORTAL_OPEN = "/portal/open/"
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
        if is_api_request(request):
            return self.get_response(request)  # a coroutine when the chain is async: awaited up
        return super().__call__(request)  # type: ignore[misc]


class BrowserSessionMiddleware(_BrowserOnly, SessionMiddleware):
    """Django's SessionMiddleware, not run for /api/."""


class BrowserAuthenticationMiddleware(_BrowserOnly, AuthenticationMiddleware):
    """Django's AuthenticationMiddleware (request.user of a staff session), not run for /api/."""


class BrowserMessageMiddleware(_BrowserOnly, MessageMiddleware):
    """Django's MessageMiddleware, not run for /api/."""


class ApiHttpsRequiredMiddleware:
    """With SECURE_SSL_REDIRECT on, a plain-HTTP request to the agent API is refused with the
    API's JSON error instead of Django's redirect (SecurityMiddleware, next in the chain):
    clients re-send a 301'd PUT as a GET, so the write would be lost while the client believes
    it went through. Pages keep the redirect."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if settings.SECURE_SSL_REDIRECT and is_api_request(request) and not request.is_secure():
            return JsonResponse(
                {
                    "error": {
                        "code": "https_required",
                        "message": "Use HTTPS: the agent API is not served over plain HTTP.",
                        "fields": {},
                    }
                },
                status=403,
            )
        return self.get_response(request)


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
    The API validates its own query parameters and is left alone.

    A NUL in a page's path (`/staff/travellers/%00/`) names nothing that can exist: it answers
    404 before a view would send it to PostgreSQL. The API refuses it itself (400, the field
    named), and so does the portal's link page (its own "This link doesn't work")."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path and not (
            is_api_request(request) or request.path.startswith(_PORTAL_OPEN)
        ):
            raise Http404("No such page.")
        if "%00" in request.META.get("QUERY_STRING", "") and not is_api_request(request):
            cleaned = QueryDict(mutable=True)
            for name, values in request.GET.lists():
                cleaned.setlist(name.replace("\x00", ""), [v.replace("\x00", "") for v in values])
            cleaned._mutable = False
            request.GET = cleaned
        return self.get_response(request)
