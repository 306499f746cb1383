"""Request ids: every log line of a request carries one, taken from the proxy's `X-Request-ID`
when it sends a usable one, otherwise made here, and returned in the response's `X-Request-ID`.
A task queued during the request carries it in a message header, so a turn's web and worker
lines share it.

The same middleware times the agent's requests (`memoryadmin_agent_request_seconds`): it is the
outermost one, so the figure is what the whole stack cost."""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from django.http import HttpRequest, HttpResponse

from . import metrics

HEADER = "X-Request-ID"
TASK_HEADER = "memoryadmin_request_id"
NONE = "-"
# Ids from the proxy are kept only when they are short and plain: they end up in every log
# line, where anything else could forge or break one.
_USABLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,127}")
AGENT_PREFIX = "/api/v1/"

_current: ContextVar[str] = ContextVar("memoryadmin_request_id", default=NONE)


def usable_request_id(given: str | None) -> str:
    if given and _USABLE.fullmatch(given):
        return given
    return uuid.uuid4().hex


class RequestIdMiddleware:
    """First in MIDDLEWARE: sets the request id for everything below it, and times /api/v1/."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        request_id = usable_request_id(request.META.get("HTTP_X_REQUEST_ID"))
        request.request_id = request_id  # type: ignore[attr-defined]
        token = _current.set(request_id)
        try:
            response = self.get_response(request)
            response.headers[HEADER] = request_id
        finally:
            _current.reset(token)
        if request.path_info.startswith(AGENT_PREFIX):
            match = request.resolver_match
            metrics.observe_agent_request(
                metrics.operation_for(match.url_name if match else None, request.method or ""),
                response.status_code,
                time.perf_counter() - started,
            )
        return response


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to every record (NONE outside a request or a task)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = _current.get()
        return True


# --- Celery: the id travels in a header of the task's message ----------------------------------


def _add_header(headers: dict[str, Any] | None = None, **_: Any) -> None:
    request_id = _current.get()
    if headers is not None and request_id != NONE:
        headers[TASK_HEADER] = request_id


def _task_started(task: Any = None, **_: Any) -> None:
    request = getattr(task, "request", None)
    given = getattr(request, TASK_HEADER, None)
    if given is None:
        given = (getattr(request, "headers", None) or {}).get(TASK_HEADER)
    if given is None and _current.get() != NONE:
        given = _current.get()  # run eagerly, inside the request that queued it
    # A task of its own (beat, a retry with no header): an id of its own, so its lines group.
    stack = _task_tokens.__dict__.setdefault("stack", [])
    stack.append(_current.set(usable_request_id(given)))


def _task_ended(**_: Any) -> None:
    stack = _task_tokens.__dict__.get("stack")
    if stack:
        _current.reset(stack.pop())


_task_tokens = threading.local()


def connect_celery_signals() -> None:
    from celery import signals

    signals.before_task_publish.connect(_add_header, weak=False, dispatch_uid="ma-rid-publish")
    signals.task_prerun.connect(_task_started, weak=False, dispatch_uid="ma-rid-prerun")
    signals.task_postrun.connect(_task_ended, weak=False, dispatch_uid="ma-rid-postrun")
