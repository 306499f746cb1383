"""One error shape for everything under /api/:

    {"error": {"code": "machine_readable", "message": "For people.", "fields": {"name": "why"}}}

DRF exceptions, our domain errors (facts.errors) and unknown URLs all come out this way, so an
agent host needs one parser. Messages never repeat submitted values: fact values are untrusted
text and may be exactly what the write filter exists to keep out of logs.

Other API modules reuse `ApiError` (raise it) or `error_response` (return it).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.views import csrf as csrf_views
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.settings import api_settings

from memoryadmin.facts.errors import (
    FactBlocked,
    FactConflict,
    FactError,
    FactInvalid,
    FactNotFound,
    FactStateError,
    WriteFilterMisconfigured,
)
from memoryadmin.middleware import is_api_request

logger = logging.getLogger(__name__)

# Domain error -> (HTTP status, code). FactError subclasses not listed fall back to 400.
_FACT_ERRORS: tuple[tuple[type[FactError], int, str], ...] = (
    (FactInvalid, status.HTTP_400_BAD_REQUEST, "invalid"),
    # The filter fails closed on a bad blocked pattern: the server cannot save safely now.
    (WriteFilterMisconfigured, status.HTTP_503_SERVICE_UNAVAILABLE, ""),
    (FactBlocked, status.HTTP_422_UNPROCESSABLE_ENTITY, "blocked_by_filter"),
    (FactNotFound, status.HTTP_404_NOT_FOUND, "not_found"),
    # In the API a version conflict can only come from an If-Match precondition.
    (FactConflict, status.HTTP_412_PRECONDITION_FAILED, "precondition_failed"),
    (FactStateError, status.HTTP_409_CONFLICT, ""),  # "" = the error's own code
)
_FIXED_MESSAGES = {
    # Parser messages can quote bytes of the body; say what is wrong without them.
    exceptions.ParseError: ("malformed_json", "The request body is not valid JSON."),
    exceptions.ValidationError: ("invalid", "The request is not valid; see fields."),
}


def error_body(code: str, message: str, fields: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "fields": dict(fields or {})}}


def error_response(
    *,
    status: int,
    code: str,
    message: str,
    fields: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """A DRF response in the house error shape, for views that return rather than raise."""
    return Response(error_body(code, message, fields), status=status, headers=dict(headers or {}))


class ApiError(exceptions.APIException):
    """Raise from any /api/ view to answer with the house error shape."""

    def __init__(
        self,
        *,
        status_code: int,
        code: str,
        message: str,
        fields: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(detail=message, code=code)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.fields = dict(fields or {})
        self.headers = dict(headers or {})


class InsufficientScope(exceptions.PermissionDenied):
    default_code = "insufficient_scope"

    def __init__(self, missing: list[str]) -> None:
        super().__init__(
            detail=f"This token lacks the scope(s) needed here: {', '.join(missing)}.",
            code=self.default_code,
        )


class IdempotencyKeyReused(ApiError):
    def __init__(self) -> None:
        super().__init__(
            status_code=status.HTTP_422_UNPROCESSABLE_ENTITY,
            code="idempotency_key_reused",
            message="This Idempotency-Key was already used for a different request; "
            "use a new key for a new request.",
            fields={"Idempotency-Key": "Already used for a different request."},
        )


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, str]:
    """DRF's nested error detail as {"facts[3].value": "message"}: the same field naming the
    services use, and one string per field so clients need not walk lists."""
    out: dict[str, str] = {}
    if isinstance(detail, Mapping):
        for name, sub in detail.items():
            if name == api_settings.NON_FIELD_ERRORS_KEY:
                path = prefix or "body"
            elif isinstance(name, int):  # ListSerializer reports item errors by index
                path = f"{prefix}[{name}]"
            else:
                path = f"{prefix}.{name}" if prefix else str(name)
            out.update(flatten_errors(sub, path))
    elif isinstance(detail, list):
        if all(not isinstance(item, (Mapping, list)) for item in detail):
            if detail:
                out[prefix or "body"] = " ".join(str(item) for item in detail)
        else:
            for index, sub in enumerate(detail):
                if sub:
                    out.update(flatten_errors(sub, f"{prefix}[{index}]"))
    else:
        out[prefix or "body"] = str(detail)
    return out


def _fact_error_response(exc: FactError) -> Response:
    status_code, code = next(
        ((status_code, code) for cls, status_code, code in _FACT_ERRORS if isinstance(exc, cls)),
        (status.HTTP_400_BAD_REQUEST, exc.code),
    )
    return error_response(
        status=status_code, code=code or exc.code, message=exc.message, fields=exc.fields
    )


def _api_exception_response(exc: exceptions.APIException) -> Response:
    headers: dict[str, str] = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(max(1, int(exc.wait + 0.999)))
    if isinstance(exc, ApiError):
        headers.update(exc.headers)
        return error_response(
            status=exc.status_code,
            code=exc.code,
            message=exc.message,
            fields=exc.fields,
            headers=headers,
        )
    fields: dict[str, str] = {}
    if isinstance(exc, exceptions.ValidationError):
        fields = flatten_errors(exc.detail)
    code, message = next(
        (fixed for cls, fixed in _FIXED_MESSAGES.items() if isinstance(exc, cls)),
        (
            str(exc.default_code),
            str(exc.detail) if isinstance(exc.detail, str) else str(exc.default_detail),
        ),
    )
    return error_response(
        status=exc.status_code, code=code, message=message, fields=fields, headers=headers
    )


# While no primary answers (a failover under way, the server restarting): 503, never 500.
RETRY_AFTER_SECONDS = 5
DATABASE_UNAVAILABLE = ("database_unavailable", "The database is not available; try again soon.")


def database_unavailable(exc: BaseException | None) -> bool:
    """A connection-level database error: refused, reset, timed out, a read-only server (a
    standby not yet promoted). Not a query's own error (a constraint, bad SQL)."""
    import psycopg
    from django.db import InterfaceError, OperationalError

    if isinstance(exc, (OperationalError, InterfaceError)):
        return True
    if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
        return True
    cause = getattr(exc, "__cause__", None)
    return isinstance(cause, psycopg.errors.ReadOnlySqlTransaction)


def database_unavailable_response(request: HttpRequest) -> HttpResponse:
    """JSON `database_unavailable` under /api/, a plain page elsewhere; both with Retry-After.
    Rendered without the request's context (no query while the database is away)."""
    if is_api_path(request):
        response: HttpResponse = JsonResponse(error_body(*DATABASE_UNAVAILABLE), status=503)
    else:
        response = HttpResponse(render_to_string("503.html"), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def api_exception_handler(exc: Exception, context: Mapping[str, Any]) -> Response:
    """DRF's EXCEPTION_HANDLER. Unexpected errors are logged and answered in the same shape."""
    # Imported here: rest_framework.views imports the default permission classes, which import
    # this module.
    from rest_framework.views import set_rollback

    set_rollback()
    if isinstance(exc, FactError):
        return _fact_error_response(exc)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, RequestDataTooBig):
        return error_response(
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            code="too_large",
            message="The request body is larger than this endpoint accepts.",
        )
    elif isinstance(exc, SuspiciousOperation):
        return error_response(
            status=status.HTTP_400_BAD_REQUEST, code="bad_request", message="Bad request."
        )
    if isinstance(exc, exceptions.APIException):
        return _api_exception_response(exc)
    if database_unavailable(exc):
        logger.warning("api: database unavailable (%s)", type(exc).__name__)
        return error_response(
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            code=DATABASE_UNAVAILABLE[0],
            message=DATABASE_UNAVAILABLE[1],
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    view = context.get("view")
    logger.exception("api: unhandled error in %s", type(view).__name__ if view else "view")
    return error_response(
        status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        code="server_error",
        message="Something went wrong on our side.",
    )


@csrf_exempt  # any method gets the JSON 404, never Django's HTML CSRF page
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Catch-all for unknown URLs under /api/: a JSON 404 instead of an HTML page."""
    return JsonResponse(
        error_body("not_found", "There is no API endpoint at this address."), status=404
    )


def is_api_path(request: HttpRequest) -> bool:
    return is_api_request(request)


def api_csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW. The API authenticates with bearer tokens and never needs CSRF, but a
    request that reaches a non-API view under /api/ must still get the JSON shape, not HTML."""
    if is_api_path(request):
        return JsonResponse(
            error_body("forbidden", "This request was refused (CSRF check failed)."), status=403
        )
    return csrf_views.csrf_failure(request, reason=reason)


def _json_or_page(status_code: int, code: str, message: str, page: Any) -> Any:
    def handler(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
        if is_api_path(request):
            return JsonResponse(error_body(code, message), status=status_code)
        if status_code == 500:
            return page(request)
        return page(request, exception)

    return handler


# Django's handler400/403/404/500 (memoryadmin/urls.py): JSON under /api/, the usual pages
# elsewhere. They answer whatever escapes the views, e.g. an error in a middleware.
bad_request = _json_or_page(400, "bad_request", "Bad request.", defaults.bad_request)
permission_denied = _json_or_page(
    403, "forbidden", "You may not do this.", defaults.permission_denied
)
page_not_found = _json_or_page(
    404, "not_found", "There is no API endpoint at this address.", defaults.page_not_found
)
_server_error = _json_or_page(
    500, "server_error", "Something went wrong on our side.", defaults.server_error
)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: Django calls it inside its `except` for the error that escaped, so a database
    that is away (the error in flight) is answered 503 with Retry-After instead."""
    if database_unavailable(sys.exc_info()[1]):
        return database_unavailable_response(request)
    return _server_error(request)
