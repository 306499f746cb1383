"""Small response policies that apply to every dynamic page and API answer."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, QueryDict
from django.utils.cache import add_never_cache_headers


class NoStoreMiddleware:
    """`Cache-Control: no-store` on everything the application renders: staff pages, the
    traveller portal and API answers carry personal data that no browser or proxy should keep.
    Static files are answered by WhiteNoise before this middleware and stay cacheable."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not response.has_header("Cache-Control"):
            add_never_cache_headers(response)
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
        if "%00" in request.META.get("QUERY_STRING", "") and not request.path_info.startswith(
            "/api/"
        ):
            cleaned = QueryDict(mutable=True)
            for name, values in request.GET.lists():
                cleaned.setlist(name.replace("\x00", ""), [v.replace("\x00", "") for v in values])
            cleaned._mutable = False
            request.GET = cleaned
        return self.get_response(request)
