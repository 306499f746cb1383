"""The real pieces: gunicorn with 2 workers and a Celery worker, both logging JSON lines, the
fake Messages API as the model. Known traffic, then the scrapes, then the logs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from memoryadmin.api.tokens import token_issue
from memoryadmin.testing.fake_anthropic import FakeAnthropic, tool_use
from tests.extraction.worker import ROOT, subprocess_database_url, terminate, wait_for
from tests.observability.scrape import value
from tests.support.gunicorn import Gunicorn

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

WEB_PORT, WORKER_METRICS_PORT = 8250, 8251
TOKEN = "live-metrics-token-0123456789"  # noqa: S105 - a test value
TIER_ONE_CALLS = 40
# Markers written through every path; none may appear in any log line.
VALUE, KEY, QUERY = "zqxvalue", "zqxkey", "zqxquery"
TRANSCRIPT, LEARNED_KEY, LEARNED_VALUE = "zqxtranscript", "zqxlearnedkey", "zqxlearnedvalue"
# Only in a single fact's address: gunicorn's access line writes the path, and hashing the key
# in it is issue 19's (accesslog.py); every other line is checked for it.
PATH_KEY = "zqxpathkey"
ENV = {
    "LOG_FORMAT": "json",
    "LOG_LEVEL": "DEBUG",
    "METRICS_ALLOWED_NETWORKS": "10.99.0.0/16",  # not the tests' address: the token is needed
    "METRICS_TOKEN": TOKEN,
    "METRICS_GAUGE_REFRESH_SECONDS": "1",  # the database gauges of the first scrape expire
}


class JsonWorker:
    """`celery -A memoryadmin --quiet worker` (no banner) with its metrics port."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.log = tempfile.NamedTemporaryFile(prefix="celery-json-", delete=False)  # noqa: SIM115
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> JsonWorker:
        env = {
            **os.environ,
            "DATABASE_URL": subprocess_database_url(),
            "DB_CONN_MAX_AGE": "0",
            **self.env,
        }
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        self.process = subprocess.Popen(  # noqa: S603 - fixed argv
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "memoryadmin",
                "--quiet",
                "worker",
                "--pool=prefork",
                "--concurrency=1",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                f"--hostname=obs-{os.getpid()}@%h",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        wait_for(
            lambda: " ready." in self.output() or self.process.poll() is not None, timeout=180
        )  # a loaded machine takes its time to import the application
        assert self.process.poll() is None, self.output()
        return self

    def output(self) -> str:
        return Path(self.log.name).read_text("utf-8", errors="replace")

    def stop(self) -> None:
        terminate(self.process)
        self.log.close()


@pytest.fixture(scope="module")
def model() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def stack(django_db_setup: Any, django_db_blocker: Any, model: FakeAnthropic) -> Iterator[Any]:
    broker = os.environ["TEST_BROKER_URL"]
    redis.Redis.from_url(broker).flushdb()
    with django_db_blocker.unblock():
        worker = JsonWorker(
            {
                **ENV,
                "CELERY_BROKER_URL": broker,
                "METRICS_WORKER_PORT": str(WORKER_METRICS_PORT),
                "ANTHROPIC_API_KEY": "sk-ant-test-fake",
                "ANTHROPIC_BASE_URL": model.base_url,
            }
        ).start()
        try:
            web = Gunicorn(
                port=WEB_PORT,
                env={
                    **ENV,
                    "CELERY_BROKER_URL": broker,
                    "ANTHROPIC_API_KEY": "sk-ant-test-fake",
                },
            ).start()
        except Exception:
            worker.stop()
            raise
    try:
        yield web, worker
    finally:
        web.stop()
        worker.stop()


def json_lines(output: str) -> list[dict[str, Any]]:
    """Every line is one JSON object (the test fails on the first that is not)."""
    lines = []
    for line in output.splitlines():
        if line.strip():
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError:
                pytest.fail(f"not a JSON line: {line[:200]!r}")
    return lines


def scrape(url: str, **headers: str) -> httpx.Response:
    return httpx.get(url, headers=headers, timeout=10)


def test_metrics_logs_and_request_ids_across_real_processes(stack, model: FakeAnthropic) -> None:
    web, worker = stack
    _, secret = token_issue(
        name="live-host", scopes=["memory:read", "memory:write", "turns:write", "portal:issue"]
    )
    auth = {"Authorization": f"Bearer {secret}"}
    base = f"{web.url}/api/v1/subjects/FF-LIVE-1"
    bearer = {"Authorization": f"Bearer {TOKEN}"}

    # The access rules over real HTTP, on both ports: a wrong address (the tests' own is not in
    # METRICS_ALLOWED_NETWORKS) and a wrong token get 403.
    for url in (f"{web.url}/metrics", f"http://127.0.0.1:{WORKER_METRICS_PORT}/metrics"):
        assert scrape(url).status_code == 403
        assert scrape(url, Authorization="Bearer not-the-token").status_code == 403
        assert scrape(url, **bearer).status_code == 200
    before = scrape(f"{web.url}/metrics", **bearer).text

    # Known traffic: each call on a new connection, so the kernel spreads them over the workers.
    for _ in range(TIER_ONE_CALLS):
        response = httpx.get(f"{base}/tier-one", headers=auth, timeout=10)
        assert response.status_code == 200 and response.headers["X-Request-ID"]
    put = httpx.put(
        f"{base}/facts",
        headers=auth,
        timeout=10,
        json={
            "facts": [{"key": f"seat_{KEY}", "value": f"aisle {VALUE}", "category": "preference"}]
        },
    )
    assert put.status_code == 200, put.text
    single = f"{base}/facts/note_{PATH_KEY}"
    assert httpx.put(
        single,
        headers=auth,
        timeout=10,
        json={"value": f"window {VALUE}", "category": "preference"},
    ).status_code in (200, 201)
    assert httpx.get(single, headers=auth, timeout=10).status_code == 200
    assert (
        httpx.get(f"{base}/facts/search", params={"q": QUERY}, headers=auth, timeout=10).status_code
        == 200
    )
    assert httpx.delete(single, headers=auth, timeout=10).status_code in (200, 204)
    link = httpx.post(f"{base}/portal-links", headers=auth, timeout=10, json={})
    assert link.status_code == 201, link.text
    portal_secret = link.json()["url"].rstrip("/").rsplit("/", 1)[-1]
    opened = httpx.get(f"{web.url}/portal/open/{portal_secret}", timeout=10)
    assert opened.status_code in (200, 302, 303)

    # A turn: its web and worker lines share the proxy's request id.
    model.script(
        tool_use(
            [
                {
                    "key": f"meal_{LEARNED_KEY}",
                    "value": f"vegan {LEARNED_VALUE}",
                    "category": "preference",
                }
            ]
        )
    )
    turn = httpx.post(
        f"{base}/turns",
        timeout=10,
        json={
            "session_id": "live-session",
            "turn_id": "live-turn-1",
            "messages": [
                {"role": "user", "text": f"I eat vegan food {TRANSCRIPT}"},
                {"role": "assistant", "text": "Noted."},
            ],
        },
        headers={**auth, "X-Request-ID": "live-turn-req-1"},
    )
    assert turn.status_code == 202, turn.text
    assert turn.headers["X-Request-ID"] == "live-turn-req-1"
    job_url = f"{web.url}/api/v1/jobs/{turn.json()['job_id']}"
    job = wait_for(
        lambda: (
            (j := httpx.get(job_url, headers=auth, timeout=10).json())["status"]
            in {"succeeded", "failed", "skipped"}
            and j
        ),
        timeout=40,
    )
    assert job["status"] == "succeeded" and job["counts"]["stored"] == 1, job["reason"]

    # Counted across the workers: the two workers' files add up to exactly the calls made.
    time.sleep(1.5)
    after = scrape(f"{web.url}/metrics", **bearer).text
    name = "memoryadmin_agent_request_seconds_count"
    assert (
        value(after, name, operation="tier_one", status="200")
        - value(before, name, operation="tier_one", status="200")
    ) == TIER_ONE_CALLS
    assert value(after, name, operation="turn", status="202") >= 1
    assert value(after, name, operation="search", status="200") >= 1
    web_lines = json_lines(web.output())
    access = [line for line in web_lines if line["logger"] == "gunicorn.access"]
    tier_one_pids = {line["process"] for line in access if "/tier-one" in line["message"]}
    assert len(tier_one_pids) == 2, "both workers served tier one"
    assert value(after, "memoryadmin_facts", category="preference") >= 1

    # The worker counts the turn on its own port.
    worker_text = scrape(f"http://127.0.0.1:{WORKER_METRICS_PORT}/metrics", **bearer).text
    assert value(worker_text, "memoryadmin_extraction_jobs_total", outcome="succeeded") == 1
    assert value(worker_text, "memoryadmin_extraction_facts_total", result="stored") == 1

    # Logs: JSON lines everywhere, the request id on the request's lines, joined with the
    # worker's, and no marker anywhere.
    worker_lines = json_lines(worker.output())
    assert any(line["request_id"] == "live-turn-req-1" for line in access)
    joined = [line for line in worker_lines if line["request_id"] == "live-turn-req-1"]
    assert any("extraction job" in line["message"] for line in joined), worker_lines[-10:]
    everything = web.output() + worker.output()
    # The key in a single-fact address too: the access log writes it as its keyed hash.
    for marker in (
        VALUE,
        KEY,
        QUERY,
        TRANSCRIPT,
        LEARNED_KEY,
        LEARNED_VALUE,
        portal_secret,
        PATH_KEY,
    ):
        assert marker not in everything, marker
