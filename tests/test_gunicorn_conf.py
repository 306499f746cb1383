"""`make serve`'s gunicorn, as an agent host meets it: the connection stays open between calls."""

from __future__ import annotations

import http.client
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.integration  # a real gunicorn


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_up(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, "gunicorn exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("gunicorn did not start")


def test_an_agent_host_keeps_one_connection_for_many_calls():
    """The sync worker closed every connection after one answer; an agent host then paid a TCP
    connect on each call. Several calls now travel on one connection."""
    port = _free_port()
    env = {
        **os.environ,
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": "1",
        "GUNICORN_ACCESS_LOG": "/dev/null",
    }
    env.pop("GUNICORN_CMD_ARGS", None)
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "memoryadmin.wsgi",
            "-c",
            "gunicorn.conf.py",
            "--log-level",
            "warning",
        ],
        cwd=str(ROOT),
        env=env,
        start_new_session=True,
    )
    try:
        _wait_up(port, proc)
        client = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        answers, sockets = [], []
        for _ in range(3):
            # No token: refused before any database work, which is all this test needs.
            client.request("GET", "/api/v1/subjects/FF-1/tier-one")
            response = client.getresponse()
            response.read()
            answers.append((response.status, response.getheader("Connection", "")))
            sockets.append(client.sock)  # http.client opens a new one when the server closes
        assert answers == [(401, "keep-alive")] * 3
        assert sockets[0] is not None and sockets == [sockets[0]] * 3
        client.close()
    finally:
        proc.terminate()
        proc.wait(20)
