"""The Celery worker's metrics, on a port of its own (METRICS_WORKER_PORT): the counters its
tasks keep (extraction jobs and facts, erasures of the retention sweep, ...), added up over the
pool's processes. The same access rule as the web's /metrics.

memoryadmin/celery.py calls `prepare_environment()` before anything imports prometheus-client,
so the prefork pool's children write to a shared directory; the worker's main process serves
it (`start_server`, on `worker_init`) and marks each child that ends as dead
(`worker_process_shutdown`), so its gauges go and its counters stay."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

logger = logging.getLogger(__name__)

_server: WSGIServer | None = None


def prepare_environment(*, serves_metrics: bool) -> None:
    """For a worker that serves metrics (METRICS_WORKER_PORT, which memoryadmin/celery.py reads
    through the typed settings): a fresh multiprocess directory, unless one is given. Runs
    before Django and prometheus-client are imported.

    PROMETHEUS_MULTIPROC_DIR is prometheus-client's own switch, read from the process's
    environment by the client itself and set here or by gunicorn.conf.py at run time: it is
    process state, not a setting, so it is read and written in `os.environ`."""
    if serves_metrics and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="memoryadmin-worker-")


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass  # scrapes every 15 s would flood the worker's log


def metrics_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    from django.conf import settings

    from . import exposition
    from .access import metrics_allowed

    if environ.get("PATH_INFO") != "/metrics":
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"Not found\n"]
    if not metrics_allowed(
        remote_addr=environ.get("REMOTE_ADDR", ""),
        authorization=environ.get("HTTP_AUTHORIZATION", ""),
        networks=settings.METRICS_ALLOWED_NETWORKS,
        token=settings.METRICS_TOKEN,
    ):
        start_response("403 Forbidden", [("Content-Type", "text/plain")])
        return [b"Forbidden\n"]
    from prometheus_client import CONTENT_TYPE_LATEST

    body = exposition.render(with_database_gauges=False)
    start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST)])
    return [body]


def start_server(**_: Any) -> None:
    """Serve /metrics on METRICS_WORKER_BIND:METRICS_WORKER_PORT from a daemon thread."""
    from django.conf import settings

    global _server
    port, bind = settings.METRICS_WORKER_PORT, settings.METRICS_WORKER_BIND
    if not port or _server is not None:
        return
    _server = make_server(bind, port, metrics_app, handler_class=_QuietHandler)
    threading.Thread(target=_server.serve_forever, name="metrics", daemon=True).start()
    logger.info("worker metrics on %s:%s/metrics", bind, port)


def child_ended(pid: int | None = None, **_: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid or os.getpid())


def stop_server(**_: Any) -> None:
    global _server
    if _server is not None:
        _server.shutdown()
        _server = None
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
    if directory and os.path.basename(directory).startswith("memoryadmin-worker-"):
        shutil.rmtree(directory, ignore_errors=True)  # only a directory we made ourselves


def connect(app: Any) -> None:
    """Hook the server to the worker's life (memoryadmin/celery.py)."""
    from celery import signals

    signals.worker_init.connect(start_server, weak=False)
    signals.worker_process_shutdown.connect(child_ended, weak=False)
    signals.worker_shutdown.connect(stop_server, weak=False)
