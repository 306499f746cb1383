"""Celery beat in LOG_FORMAT=json: one JSON object per line, like web and worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.extraction.worker import ROOT, subprocess_database_url, terminate, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_beat_writes_json_lines():
    with tempfile.TemporaryDirectory(prefix="beat-json-") as folder:
        log_path = Path(folder) / "beat.log"
        env = {
            **os.environ,
            "DATABASE_URL": subprocess_database_url(),
            "LOG_FORMAT": "json",
            "CELERY_BROKER_URL": os.environ["TEST_BROKER_URL"],
            "DB_CONN_MAX_AGE": "0",
            # The first task falls due at the shortest interval: 2 s here, not 30.
            "USAGE_RECORD_INTERVAL_SECONDS": "2",
        }
        with log_path.open("wb") as log:
            process = subprocess.Popen(  # noqa: S603 - fixed argv
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "memoryadmin",
                    "--quiet",
                    "beat",
                    "--loglevel=INFO",
                    f"--schedule={Path(folder) / 'schedule'}",
                ],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_for(
                lambda: "Sending due task" in log_path.read_text("utf-8", "replace"), timeout=180
            )
        finally:
            terminate(process)
        lines = [line for line in log_path.read_text("utf-8").splitlines() if line.strip()]
    entries = [json.loads(line) for line in lines]  # fails on any line that is not JSON
    assert any(
        entry["logger"] == "celery.beat" and "beat: Starting" in entry["message"]
        for entry in entries
    )
    assert all({"time", "level", "logger", "message", "request_id"} <= set(e) for e in entries)
