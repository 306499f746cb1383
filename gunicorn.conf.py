"""gunicorn settings for `make serve` and the Procfile; each can be overridden by environment.

The access log leaves out query strings and the Referer: search terms and links can carry a
traveller's words or a one-time portal link, and logs are kept far longer than either.
"""

import os
import shutil
import tempfile

bind = os.environ.get("BIND", f"0.0.0.0:{os.environ.get('PORT', '8000')}")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
# gthread, even with one thread: unlike the sync worker it keeps connections alive, so an agent
# host's pooled client (httpx, HttpMemoryStore) does not pay a TCP connect and close on every
# call. Measured on the agent's tier one over HTTP (bench/RESULTS.md): p50 down by a quarter and
# a third more requests per second than the sync worker on the same two workers.
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "gthread")
threads = int(os.environ.get("GUNICORN_THREADS", "1"))
# A listening socket per worker (SO_REUSEPORT), the kernel spreading new connections among them.
# With kept-alive connections and one shared socket, whichever worker woke first could take a
# burst of new connections and keep them while the other stood idle (seen in the benchmark).
reuse_port = True
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = 20
keepalive = 5
# Recycle workers now and then, so a slow leak cannot grow without bound. Not too often: a new
# worker imports the application (about a second of CPU) and starts with empty caches, and at
# the agent's rates 5,000 requests went by every few seconds.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "100000"))
max_requests_jitter = max_requests // 10
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-")
errorlog = "-"
# %(U)s is the path without the query string; no %(r)s (request line) and no %(f)s (Referer).
# %(request_id)s: the X-Request-ID answered (memoryadmin/accesslog.py), to join the app's lines.
access_log_format = '%(h)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms %(request_id)s'
# Behind the airline's proxy: trust X-Forwarded-* only from the addresses listed here.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
# No control socket: one fixed path per user would be shared by every gunicorn on the machine.
control_socket_disable = True
# ... and with a portal link's one-time secret cut out of the path.
logger_class = "memoryadmin.accesslog.RedactingLogger"

# LOG_FORMAT=json: gunicorn's own lines (start, workers, access) as JSON objects too, one a line,
# with the formatter the application uses (memoryadmin/observability/logs.py).
if os.environ.get("LOG_FORMAT", "text").strip().lower() == "json":
    _json = {"class": "logging.StreamHandler", "formatter": "json"}
    logconfig_dict = {
        "formatters": {"json": {"()": "memoryadmin.observability.logs.JsonFormatter"}},
        "handlers": {
            "console": {**_json, "stream": "ext://sys.stdout"},
            "error_console": {**_json, "stream": "ext://sys.stderr"},
        },
        "loggers": {
            "gunicorn.error": {"level": "INFO", "handlers": ["error_console"], "propagate": False},
            "gunicorn.access": {"level": "INFO", "handlers": ["console"], "propagate": False},
        },
    }


# Metrics across workers (prometheus-client's multiprocess mode): each worker writes its counts
# to files in PROMETHEUS_MULTIPROC_DIR and /metrics adds them up. The directory must be set
# before a worker imports the application (so not with preload_app) and start empty.
_made_metrics_dir = False


def on_starting(server):  # noqa: ANN001, ANN201 - gunicorn's hook
    global _made_metrics_dir
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
    if not directory:
        directory = tempfile.mkdtemp(prefix="memoryadmin-web-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
        _made_metrics_dir = True
    else:  # a directory given by the operator: last run's files would add to this run's counts
        os.makedirs(directory, exist_ok=True)
        for name in os.listdir(directory):
            if name.endswith(".db"):
                os.unlink(os.path.join(directory, name))


def child_exit(server, worker):  # noqa: ANN001, ANN201 - gunicorn's hook
    """A worker that ended (recycled after max_requests, or killed): its live gauges go; its
    counters stay in the sum."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server):  # noqa: ANN001, ANN201 - gunicorn's hook
    if _made_metrics_dir:
        shutil.rmtree(os.environ["PROMETHEUS_MULTIPROC_DIR"], ignore_errors=True)
