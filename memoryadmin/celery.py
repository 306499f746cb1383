"""Celery app. Without CELERY_BROKER_URL the settings make tasks run eagerly in-process."""

import os

from celery import Celery, signals

from memoryadmin.conf.observability import METRICS_WORKER_PORT
from memoryadmin.observability import worker as worker_metrics
from memoryadmin.observability.logs import celery_logging

# Before anything imports prometheus-client: a worker with METRICS_WORKER_PORT counts across its
# pool's processes (memoryadmin/observability/worker.py). The port is the typed setting, read
# here since Django has not started yet.
worker_metrics.prepare_environment(serves_metrics=bool(METRICS_WORKER_PORT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

app = Celery("memoryadmin")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Worker and beat log through Django's LOGGING (text, or JSON lines with LOG_FORMAT=json).
signals.setup_logging.connect(celery_logging, weak=False)
worker_metrics.connect(app)
