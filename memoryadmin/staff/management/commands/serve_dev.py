"""`manage.py serve_dev`: Django's development server (what `make run` serves), plus the part of
beat a single process needs. With no broker, tasks run in the web process; a delivery that
failed is retried by beat's webhook sweep, and no beat runs here. So this server runs that
sweep itself, on a timer in a thread, every WEBHOOK_SWEEP_INTERVAL_SECONDS (first at start, for
what was waiting while it was down): a recipient that was briefly down is retried when due.
With a broker, the worker and beat do it, and this is plain runserver."""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.contrib.staticfiles.management.commands.runserver import Command as RunServer
from django.db import close_old_connections, connections

from memoryadmin.privacy.tasks import webhook_retry_due_task

logger = logging.getLogger(__name__)


FIRST_SWEEP_AFTER = 2.0  # seconds: the server is listening by then (the demo's receiver is on it)


def sweep_forever(stop: threading.Event, interval: float) -> None:
    """Dispatch what waits in the outbox and send every delivery that is due, until `stop`."""
    wait = FIRST_SWEEP_AFTER
    try:
        while not stop.wait(wait):
            wait = interval
            try:
                webhook_retry_due_task()
            except Exception:  # noqa: BLE001 - the next sweep tries again; the server stays up
                logger.exception("webhook sweep failed")
            finally:
                close_old_connections()
    finally:
        connections.close_all()  # this thread's


class Command(RunServer):
    help = "runserver, and beat's webhook sweep in-process when tasks run in-process."

    def inner_run(self, *args, **options) -> None:
        # inner_run is the serving process (under the autoreloader, its child), once.
        if settings.CELERY_TASK_ALWAYS_EAGER:
            threading.Thread(
                target=sweep_forever,
                args=(threading.Event(), settings.WEBHOOK_SWEEP_INTERVAL_SECONDS),
                name="webhook-sweep",
                daemon=True,
            ).start()
        super().inner_run(*args, **options)
