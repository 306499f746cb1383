"""Small response policies that apply to every dynamic page and API answer, and the browser-only
middleware that the agent API skips."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from csp.constants import HEADER as CSP_HEADER
from csp.middleware import CheckableLazyObject
from csp.middleware import CSPMiddleware as _CSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
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


# What a view (django-csp's decorators) sets on a response to change or drop its policy.
_CSP_RESPONSE_CHANGES = (
    "_csp_config",
    "_csp_update",
    "_csp_replace",
    "_csp_config_ro",
    "_csp_update_ro",
    "_csp_replace_ro",
)
_CSP_RESPONSE_EXEMPTIONS = ("_csp_exempt", "_csp_exempt_ro")
_site_policy: tuple[object, str] | None = None  # (the setting's value, its header)


@receiver(setting_changed)
def _forget_site_policy(*, setting: str, **kwargs: Any) -> None:
    global _site_policy
    if setting.startswith("CONTENT_SECURITY_POLICY"):
        _site_policy = None


def site_policy_header() -> str:
    """The Content-Security-Policy header of settings.CONTENT_SECURITY_POLICY, as django-csp
    builds it, built once per value of the setting."""
    global _site_policy
    policy = settings.CONTENT_SECURITY_POLICY
    if _site_policy is None or _site_policy[0] is not policy:
        _site_policy = (policy, build_policy())
    return _site_policy[1]


class CSPMiddleware(_CSPMiddleware):
    """django-csp's middleware; an answer that uses the site-wide policy unchanged (no nonce,
    no per-view decorator, no report-only policy, no excluded prefixes) gets the header built
    once per process instead of on every answer. Building it was half of what the whole
    middleware stack cost an agent request. Every other answer goes through django-csp."""

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        if not self._uses_the_site_policy(request, response):
            return super().process_response(request, response)
        header = site_policy_header()
        if header and CSP_HEADER not in response:
            response[CSP_HEADER] = header
        # As django-csp does once the header is written: a nonce asked for later is an error.
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)
        return response

    @staticmethod
    def _uses_the_site_policy(request: HttpRequest, response: HttpResponseBase) -> bool:
        policy = settings.CONTENT_SECURITY_POLICY
        return bool(
            policy
            and not policy.get("EXCLUDE_URL_PREFIXES")
            and not settings.CONTENT_SECURITY_POLICY_REPORT_ONLY
            and not (settings.DEBUG and response.status_code in (404, 500))
            and getattr(request, "_csp_nonce", None) is None
            and all(getattr(response, name, None) is None for name in _CSP_RESPONSE_CHANGES)
            and not any(getattr(response, name, False) for name in _CSP_RESPONSE_EXEMPTIONS)
        )
