"""Logs and metrics (memoryadmin/observability/)."""

from memoryadmin.conf.env import env
from memoryadmin.observability.logs import logging_config

# Text by default (`make run`); LOG_FORMAT=json: one JSON object per line from web, worker and
# beat. Every line carries the request id (memoryadmin/observability/logs.py).
LOG_FORMAT = env.choice("LOG_FORMAT", default="text", choices=("text", "json"))
LOG_LEVEL = env.choice(
    "LOG_LEVEL", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
)
LOGGING_CONFIG = "memoryadmin.observability.logs.configure"
LOGGING = logging_config(log_format=LOG_FORMAT, level=LOG_LEVEL)

# /metrics for these networks (CIDRs or addresses, comma-separated) or for
# `Authorization: Bearer <METRICS_TOKEN>`; both empty: nobody.
METRICS_ALLOWED_NETWORKS = env.list("METRICS_ALLOWED_NETWORKS", default=[])
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
# The database gauges (facts, queue age, sweep lag, privacy requests due) are read at most this
# often, however many scrapes come (shared through the cache).
METRICS_GAUGE_REFRESH_SECONDS = env.int("METRICS_GAUGE_REFRESH_SECONDS", default=60)
# The Celery worker serves its own /metrics on this port (0: it does not), bound to this address
# (memoryadmin/observability/worker.py; the worker reads the port before Django starts).
METRICS_WORKER_PORT = env.int("METRICS_WORKER_PORT", default=0)
METRICS_WORKER_BIND = env.str("METRICS_WORKER_BIND", default="127.0.0.1")
