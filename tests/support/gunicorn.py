"""A real gunicorn (gunicorn.conf.py, N workers) on the test database, for tests where workers,
headers or logs matter; its output is kept in a file."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx

from tests.extraction.worker import ROOT, LoggedProcess, subprocess_database_url


class Gunicorn(LoggedProcess):
    def __init__(self, *, port: int, env: dict[str, str], workers: int = 2) -> None:
        super().__init__(log_prefix="gunicorn-")
        self.port = port
        self.env = env
        self.workers = workers

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 180.0) -> Gunicorn:
        env = {
            **os.environ,
            "DATABASE_URL": subprocess_database_url(),
            "DB_CONN_MAX_AGE": "0",
            "DEBUG": "false",
            "BIND": f"127.0.0.1:{self.port}",
            "WEB_CONCURRENCY": str(self.workers),
            **self.env,
        }
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)  # gunicorn.conf.py makes its own
        self.process = subprocess.Popen(  # noqa: S603 - fixed argv
            [sys.executable, "-m", "gunicorn", "memoryadmin.wsgi", "-c", "gunicorn.conf.py"],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited early:\n{self.output()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=2).status_code < 500:
                    booted = self.output().count("Booting worker")
                    if booted >= self.workers:
                        return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"gunicorn did not come up:\n{self.output()}")
