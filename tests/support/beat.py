"""A real `celery beat` for integration tests, against the test database's settings and a
broker, with its schedule file in a temporary directory."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.extraction.worker import ROOT, subprocess_database_url, terminate, wait_for


class Beat:
    def __init__(self, *, broker_url: str, env: dict[str, str]) -> None:
        self.broker_url = broker_url
        self.env = env
        self.folder = tempfile.TemporaryDirectory(prefix="celery-beat-")
        self.log_path = Path(self.folder.name) / "beat.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Beat:
        env = {
            **os.environ,
            "DATABASE_URL": subprocess_database_url(),
            "CELERY_BROKER_URL": self.broker_url,
            "DB_CONN_MAX_AGE": "0",
            **self.env,
        }
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(  # noqa: S603 - fixed argv
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "memoryadmin",
                    "beat",
                    "--loglevel=INFO",
                    f"--schedule={Path(self.folder.name) / 'schedule'}",
                ],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_for(lambda: "beat: Starting" in self.output(), timeout=30)
        return self

    def output(self) -> str:
        return self.log_path.read_text("utf-8", errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        terminate(self.process)
        self.process = None
        self.folder.cleanup()
