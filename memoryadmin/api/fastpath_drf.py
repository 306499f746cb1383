"""FASTPATH_API_LEAN_GET: the agent's hot reads (GET facts, GET tier-one) answered without DRF's
per-request machinery.

Written against DRF 3.18 (3.x). It reads no private name of DRF's, but it re-implements what
DRF's dispatch does for the plain case (authentication, the scope check, the throttles,
rendering with the view's JSONRenderer), so a DRF upgrade that changes what dispatch adds to an
answer would make the two differ: tests/api check the two answers are the same byte for byte.
Checked once: DRF at major version 3 and APIView still has the pieces used here.

Safe fallback (the setting off, or the check failing): DRF's full dispatch for every GET."""

from __future__ import annotations

import functools
from typing import Any

from django.http import HttpResponse
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from memoryadmin import db
from memoryadmin.facts.errors import FactInvalid
from memoryadmin.facts.validation import clean_subject_id

from .auth import KEYWORD, TokenPrincipal
from .tokens import token_authenticate

SETTING = "FASTPATH_API_LEAN_GET"


@functools.cache
def _fits() -> bool:
    """Checked once per process (a failure is logged once and turns the trick off)."""
    return db.fastpath_fits(
        SETTING,
        "djangorestframework",
        3,
        (APIView, "get_throttles"),
        (APIView, "allowed_methods"),
    )


class LeanGetMixin:
    """The agent's hot reads answer the plain case without DRF's per-request machinery.

    A GET with a valid bearer token holding the view's GET scopes, a valid subject id, no query
    string and an Accept that JSON satisfies (none, `*/*`, `application/json`) is authenticated,
    scope-checked, throttled and rendered here with the pieces DRF would use (the token cache,
    the view's required scopes and throttles, JSONRenderer): the answer is byte for byte the
    same. Anything else (no or a bad token, a missing scope, a bad subject id, a query string,
    another Accept, HEAD, the throttle saying no) goes through DRF's full dispatch, which
    answers the errors in their one shape. A request the throttle refused was not counted, so
    going through DRF after it counts nothing twice. Skipping DRF's Request wrapper, content
    negotiation and TemplateResponse rendering is about a fifth of a tier-one request's CPU.

    With FASTPATH_API_LEAN_GET off every GET goes through DRF's full dispatch (the view's
    `get`, which answers the same data)."""

    def lean_data(self, subject_id: str) -> dict[str, Any]:
        raise NotImplementedError

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        if request.method == "GET" and db.fastpath_enabled(SETTING) and _fits():
            response = self._lean_get(request, kwargs.get("subject_id"))
            if response is not None:
                return response
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]

    def _lean_get(self, request: Any, subject_id: Any) -> HttpResponse | None:
        meta = request.META
        if meta.get("QUERY_STRING") or meta.get("HTTP_ACCEPT", "*/*").strip() not in _LEAN_ACCEPT:
            return None
        parts = meta.get("HTTP_AUTHORIZATION", "").split()
        if len(parts) != 2 or parts[0].lower() != KEYWORD:
            return None
        token = token_authenticate(parts[1])
        needed = self.required_scopes.get("GET", ())  # type: ignore[attr-defined]
        if token is None or any(scope not in token.scopes for scope in needed):
            return None
        try:
            clean_subject_id(subject_id)
        except FactInvalid:
            return None
        request.user, request.auth = TokenPrincipal(token), token
        for throttle in self.get_throttles():  # type: ignore[attr-defined]
            if not throttle.allow_request(request, self):
                return None
        response = HttpResponse(
            _LEAN_RENDERER.render(self.lean_data(subject_id)),
            content_type=_LEAN_RENDERER.media_type,
        )
        response["Allow"] = ", ".join(self.allowed_methods)  # type: ignore[attr-defined]
        return response


_LEAN_ACCEPT = frozenset({"*/*", "application/json"})
_LEAN_RENDERER = JSONRenderer()
