"""GET /healthz for load balancers and orchestrators: is the database reachable, and the broker
(when one is configured)? Public, and says nothing beyond ok/error.

`write_filter` is "error" when a stored blocked pattern is unusable and the write filter fails
closed (every save is refused). That answer stays 200: taking the service out of the load
balancer would also stop reads, deletes and the settings page where the pattern gets fixed."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from kombu import Connection

from memoryadmin.facts.selectors import write_filter_problems

logger = logging.getLogger(__name__)


def database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone() == (1,)
    except DatabaseError:
        logger.warning("healthz: database unreachable", exc_info=True)
        return False


def write_filter_status() -> str:
    try:
        problems = write_filter_problems()
    except DatabaseError:
        return "error"
    if problems:
        logger.error("healthz: the write filter refuses every save (bad blocked pattern)")
        return "error"
    return "ok"


def broker_status() -> str:
    """"eager" when no broker is configured (tasks run in-process), else "ok" or "error"."""
    url = settings.CELERY_BROKER_URL
    if not url:
        return "eager"
    timeout = settings.API_HEALTH_BROKER_TIMEOUT_SECONDS
    try:
        with Connection(
            url, connect_timeout=timeout, transport_options={"socket_timeout": timeout}
        ) as conn:
            conn.ensure_connection(
                max_retries=1, interval_start=0, interval_step=0, timeout=timeout
            )
        return "ok"
    except Exception:  # noqa: BLE001 - any failure to connect means "not healthy"
        logger.warning("healthz: broker unreachable", exc_info=True)
        return "error"


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    database = "ok" if database_ok() else "error"
    body = {"database": database, "broker": broker_status()}
    healthy = database == "ok" and body["broker"] != "error"
    body["write_filter"] = write_filter_status() if database == "ok" else "error"
    return JsonResponse(body, status=200 if healthy else 503)


urlpatterns = [path("", healthz, name="healthz")]
