"""Language for the portal only: the traveller's choice (a cookie scoped to /portal/), else the
browser's Accept-Language. Staff pages and the API stay in English, so this is not Django's
LocaleMiddleware, which would translate every page."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.utils.cache import patch_vary_headers

PORTAL_PREFIX = "/portal/"
LANGUAGE_COOKIE = "portal_language"


def supported_language(code: str | None) -> str | None:
    if not code:
        return None
    try:
        return translation.get_supported_language_variant(code)
    except LookupError:
        return None


def portal_language(request: HttpRequest) -> str:
    chosen = supported_language(request.COOKIES.get(LANGUAGE_COOKIE))
    return chosen or translation.get_language_from_request(request)


class PortalLocaleMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path_info.startswith(PORTAL_PREFIX):
            return self.get_response(request)
        language = portal_language(request)
        translation.activate(language)
        request.LANGUAGE_CODE = translation.get_language()
        try:
            response = self.get_response(request)
        finally:
            translation.activate(settings.LANGUAGE_CODE)
        patch_vary_headers(response, ("Accept-Language", "Cookie"))
        response.headers.setdefault("Content-Language", language)
        return response
