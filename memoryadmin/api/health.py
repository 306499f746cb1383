"""GET /healthz for load balancers and orchestrators: is the database reachable, and the broker
and the shared cache (when configured)? Public, and says nothing beyond ok/error.

PostgreSQL is the system of record: without it the answer is 503 (`status: error`). Without the
broker or the shared cache the agent API, the staff pages and the portal go on serving (turns wait
`queued`, the throttles count per process), so the answer stays 200 with `status: degraded` and
names which one is down; an orchestrator must not take a working instance out for it.

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

from memoryadmin.db import cache_url, redis_client, replica_states
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
    """ "eager" when no broker is configured (tasks run in-process), else "ok" or "error"."""
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


def cache_status() -> str:
    """ "local" when the cache is process memory (no Redis configured), else "ok" or "error"."""
    url = cache_url()
    if not url:
        return "local"
    try:
        redis_client(url).ping()
        return "ok"
    except Exception:  # noqa: BLE001 - any failure to answer means "not healthy"
        logger.warning("healthz: shared cache unreachable", exc_info=False)
        return "error"


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    database = "ok" if database_ok() else "error"
    body = {"database": database, "broker": broker_status(), "cache": cache_status()}
    body["write_filter"] = write_filter_status() if database == "ok" else "error"
    if settings.DATABASE_REPLICAS:
        # Each read replica as this process last saw it; one down or lagging costs the primary
        # its reads, not the service: still 200, `degraded`.
        body["replicas"] = {
            state.alias: {"state": state.state, "lag_seconds": state.lag_seconds}
            for state in replica_states()
        }
    if database != "ok":
        status = "error"
    elif "error" in (body["broker"], body["cache"], body["write_filter"]) or any(
        replica["state"] != "ok" for replica in body.get("replicas", {}).values()
    ):
        status = "degraded"
    else:
        status = "ok"
    return JsonResponse({"status": status, **body}, status=200 if database == "ok" else 503)


urlpatterns = [path("", healthz, name="healthz")]
