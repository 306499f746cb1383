"""Logging for web, worker and beat: readable text by default (`make run`), one JSON object per
line with LOG_FORMAT=json. Both carry the request id (`requestid.RequestIdFilter`).

Imports nothing of Django's: settings.py builds LOGGING with `logging_config`, and gunicorn's
master uses the same formatter for its own lines (gunicorn.conf.py).

Messages are written by our code with counts and ids only; values, keys, evidence and portal
secrets are never passed to a logger (tests/observability/test_logs.py writes markers through
every path and searches the captured output)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

TEXT_FORMAT = "%(asctime)s [%(request_id)s] %(levelname)s %(name)s %(message)s"


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "logger", "message", "request_id", ...}` on one line; an exception
    goes in `exc_info` as text. Never raises on odd arguments: a bad log call still logs."""

    def format(self, record: logging.LogRecord) -> str:
        request_id = getattr(record, "request_id", None)
        if (
            request_id in (None, "-")
            and isinstance(record.args, dict)
            and record.args.get("request_id")
        ):
            request_id = record.args["request_id"]  # gunicorn's access line (accesslog.py)
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": request_id or "-",
            "process": record.process,
        }
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def logging_config(*, log_format: str = "text", level: str = "INFO") -> dict[str, Any]:
    """Django's LOGGING. In JSON every logger ends at the root's one handler (Celery's own
    loggers and the libraries' too), so no line escapes the format."""
    json_mode = log_format.strip().lower() == "json"
    formatter = (
        {"()": "memoryadmin.observability.logs.JsonFormatter"}
        if json_mode
        else {"format": TEXT_FORMAT}
    )
    handler = {
        "class": "logging.StreamHandler",
        "formatter": "main",
        "filters": ["request_id", "paths"],
    }
    config: dict[str, Any] = {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "request_id": {"()": "memoryadmin.observability.requestid.RequestIdFilter"},
            # A fact's key or a portal secret in a path Django logs (memoryadmin/accesslog.py).
            "paths": {"()": "memoryadmin.accesslog.PathRedactingFilter"},
        },
        "formatters": {"main": formatter},
        "handlers": {"console": handler},
        "loggers": {
            "memoryadmin": {"handlers": ["console"], "level": level},
            # The agent client's package (client/) when the server process uses it.
            "memoryadmin_client": {"handlers": ["console"], "level": level},
            # Django only prints request errors when DEBUG is on; production needs them most.
            "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
            "django.security": {"handlers": ["console"], "level": "WARNING", "propagate": False},
            "axes": {"handlers": ["console"], "level": "WARNING", "propagate": False},
        },
    }
    if json_mode:
        config["root"] = {"handlers": ["console"], "level": "INFO"}
        for name in ("memoryadmin", "memoryadmin_client"):  # through the root's handler, once
            config["loggers"][name] = {"level": level}
        # Celery's task lines name the task and its id, never arguments, at INFO.
        config["loggers"]["celery"] = {"level": "INFO"}
    else:
        # Celery leaves its logging to us (the setup_logging receiver): in text its own lines
        # (the worker's "ready.", each task received and finished) keep their handler.
        config["loggers"]["celery"] = {"handlers": ["console"], "level": "INFO", "propagate": False}
    return config


def configure(config: dict[str, Any]) -> None:
    """settings.LOGGING_CONFIG: Django's dictConfig, and in JSON Python's warnings through the
    logging too (a library's warning would otherwise be a bare line on stderr)."""
    import logging.config

    logging.config.dictConfig(config)
    formatter = config.get("formatters", {}).get("main", {})
    if formatter.get("()") == "memoryadmin.observability.logs.JsonFormatter":
        logging.captureWarnings(True)


def celery_logging(**_: Any) -> None:
    """Celery's `setup_logging` signal: with a receiver, Celery leaves logging to us, so worker
    and beat log through the same LOGGING as the web."""
    from django.conf import settings

    configure(settings.LOGGING)
