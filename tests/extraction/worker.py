"""A real Celery worker for integration tests, and a switch that makes this process publish to
a real broker instead of running tasks eagerly."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.db import connection

from memoryadmin.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[2]


def subprocess_database_url() -> str:
    """DATABASE_URL for the database this test run uses (test_<name>), for a subprocess."""
    conf = connection.settings_dict
    auth = quote(conf.get("USER") or "", safe="")
    if conf.get("PASSWORD"):
        auth += ":" + quote(conf["PASSWORD"], safe="")
    # A socket folder (the embedded server's) is written percent-encoded, as libpq reads it.
    host = quote(conf.get("HOST") or "127.0.0.1", safe="")
    port = conf.get("PORT") or 5432
    return f"postgres://{auth}@{host}:{port}/{conf['NAME']}"


def _reset_producer_pool() -> None:
    """Drop the app's cached pools so the next publish uses the current broker_url. (kombu keeps
    one pool per broker URL globally; closing it would break its next user.)"""
    celery_app._pool = None
    amqp = celery_app.__dict__.get("amqp")
    if amqp is not None:
        amqp._producer_pool = None


@contextmanager
def publishing_to(broker_url: str) -> Iterator[None]:
    """Make this process send tasks to `broker_url` rather than run them in-process."""
    conf = celery_app.conf
    saved = {name: conf[name] for name in ("broker_url", "task_always_eager")}
    conf.update(broker_url=broker_url, task_always_eager=False)
    _reset_producer_pool()
    try:
        yield
    finally:
        conf.update(saved)
        _reset_producer_pool()


class LoggedProcess:
    """A process of ours (a worker, gunicorn) whose output goes to a temporary file, read by
    the tests; `stop()` ends it and closes the file."""

    def __init__(self, *, log_prefix: str) -> None:
        self.log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed in stop()
            prefix=log_prefix, suffix=".log", delete=False
        )
        self.process: subprocess.Popen[bytes] | None = None

    def output(self) -> str:
        return Path(self.log.name).read_text("utf-8", errors="replace")

    def stop(self) -> None:
        terminate(self.process)
        self.process = None
        self.log.close()


class Worker(LoggedProcess):
    """`celery -A memoryadmin worker --pool=solo` against the test database and broker."""

    def __init__(self, *, broker_url: str, env: dict[str, str], name: str = "test-worker") -> None:
        super().__init__(log_prefix="celery-worker-")
        self.broker_url = broker_url
        self.env = env
        self.name = name  # distinct names let several workers run side by side

    def start(self, timeout: float = 30.0) -> Worker:
        env = {
            **os.environ,
            "DATABASE_URL": subprocess_database_url(),
            "CELERY_BROKER_URL": self.broker_url,
            "DB_CONN_MAX_AGE": "0",
            **self.env,
        }
        self.process = subprocess.Popen(  # noqa: S603 - fixed argv
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "memoryadmin",
                "worker",
                "--pool=solo",
                "--loglevel=INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                f"--hostname={self.name}-{os.getpid()}@%h",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"celery worker exited early:\n{self.output()}")
            if " ready." in self.output():
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"celery worker did not become ready:\n{self.output()}")


def terminate(process: subprocess.Popen[bytes] | None) -> None:
    """Stop a Celery process politely, then firmly."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def wait_for(predicate: Any, *, timeout: float = 20.0, interval: float = 0.05) -> Any:
    """Poll until `predicate()` is truthy; return its value, or fail with a clear message."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")
