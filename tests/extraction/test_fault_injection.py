"""Fault injection with a real worker on a real Redis: the broker goes down while turns arrive,
and a worker's main process is killed mid-job. No turn is lost, no fact is stored twice.

The test runs its own redis-server on a port of its own, so stopping it touches nothing else."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.utils import timezone
from rest_framework.test import APIClient

from memoryadmin.api.tokens import token_issue
from memoryadmin.extraction.models import ExtractionJob, JobStatus
from memoryadmin.extraction.tasks import reap_jobs_task
from memoryadmin.facts.models import FactEvent, MemoryFact
from memoryadmin.testing.fake_anthropic import FakeAnthropic, tool_use
from tests.extraction.worker import Worker, publishing_to, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
]

AISLE = {"key": "seat_preference", "value": "Prefers aisle seats", "category": "preference"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """A throwaway redis-server (in memory, no persistence) that a test may stop and start."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.dir = tempfile.mkdtemp(prefix="fault-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        self.process = subprocess.Popen(  # noqa: S603 - fixed argv
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.dir,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(self.answers, timeout=10)
        return self

    def answers(self) -> bool:
        try:
            return bool(redis.Redis.from_url(self.url, socket_connect_timeout=0.2).ping())
        except redis.RedisError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None


@pytest.fixture
def broker() -> Iterator[RedisServer]:
    server = RedisServer(_free_port()).start()
    yield server
    server.stop()
    shutil.rmtree(server.dir, ignore_errors=True)


@pytest.fixture
def model() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic().start()
    yield server
    server.stop()


@pytest.fixture
def start_worker(
    django_db_blocker: Any, broker: RedisServer, model: FakeAnthropic
) -> Iterator[Any]:
    workers: list[Worker] = []

    def start() -> Worker:
        with django_db_blocker.unblock():
            worker = Worker(
                broker_url=broker.url,
                env={
                    "ANTHROPIC_API_KEY": "sk-ant-test-fake",
                    "ANTHROPIC_BASE_URL": model.base_url,
                    "ANTHROPIC_TIMEOUT_SECONDS": "20",
                },
            ).start()
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()


@pytest.fixture
def host(settings: Any, broker: RedisServer, model: FakeAnthropic) -> Iterator[APIClient]:
    """The agent host's view: the real API in this process, publishing to the test's broker."""
    settings.ANTHROPIC_API_KEY = "sk-ant-test-fake"
    settings.ANTHROPIC_BASE_URL = model.base_url
    _, secret = token_issue(name="fault-host", scopes=["turns:write", "memory:read"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    with publishing_to(broker.url):
        yield client


def turn(turn_id: str) -> dict[str, Any]:
    return {
        "session_id": "fault-session",
        "turn_id": turn_id,
        "messages": [{"role": "user", "text": "I always take the aisle."}],
    }


def job_status(client: APIClient, job_id: str) -> str:
    return client.get(f"/api/v1/jobs/{job_id}").json()["status"]


def test_turns_posted_while_the_broker_is_down_all_succeed_once_it_is_back(
    broker: RedisServer, start_worker: Any, host: APIClient, model: FakeAnthropic, settings: Any
) -> None:
    worker = start_worker()
    model.script(*[tool_use([AISLE]) for _ in range(5)])
    broker.stop()

    started = time.monotonic()
    responses = [
        host.post(f"/api/v1/subjects/fault-{n}/turns", turn("t-1"), format="json") for n in range(5)
    ]
    elapsed = time.monotonic() - started

    assert [r.status_code for r in responses] == [202] * 5
    assert [r.json()["status"] for r in responses] == ["queued"] * 5
    assert elapsed < 5 * 3, "a broker outage must not hold the agent host's requests"
    job_ids = [r.json()["job_id"] for r in responses]
    replay = host.post("/api/v1/subjects/fault-0/turns", turn("t-1"), format="json")
    assert (replay.status_code, replay.json()["status"]) == (200, "queued")  # not a dead job

    broker.start()  # same port, empty: nothing was ever sent
    settings.EXTRACTION_RESEND_AFTER_SECONDS = 0
    reap_jobs_task.apply()  # what beat runs every minute

    wait_for(lambda: all(job_status(host, job_id) == "succeeded" for job_id in job_ids), timeout=60)
    for n in range(5):
        assert MemoryFact.objects.filter(subject_id=f"fault-{n}").count() == 1
    assert worker.process is not None and worker.process.poll() is None, worker.output()


def test_a_job_whose_worker_main_process_is_killed_finishes_with_its_facts_stored_once(
    broker: RedisServer, start_worker: Any, host: APIClient, model: FakeAnthropic, settings: Any
) -> None:
    first = start_worker()
    model.script(tool_use([AISLE], delay=8.0), tool_use([AISLE]), tool_use([AISLE]))
    job_id = host.post("/api/v1/subjects/fault-kill/turns", turn("t-1"), format="json").json()[
        "job_id"
    ]
    wait_for(lambda: job_status(host, job_id) == "running", timeout=30)
    wait_for(lambda: len(model.requests) == 1, timeout=30)  # mid-job: the model call is out

    assert first.process is not None
    os.kill(first.process.pid, signal.SIGKILL)  # the main process: nothing gets to clean up
    first.process.wait(timeout=10)

    # Late acknowledgement: the message is still held, unacknowledged, by the broker.
    held = redis.Redis.from_url(broker.url)
    assert held.hlen("unacked") == 1
    assert ExtractionJob.objects.get(public_id=job_id).status == JobStatus.RUNNING

    second = start_worker()
    settings.EXTRACTION_JOB_DEADLINE_SECONDS = 1
    time.sleep(1.1)
    assert reap_jobs_task.apply().get() == {"sent": 1, "unsent": 0, "failed": 0}

    wait_for(lambda: job_status(host, job_id) == "succeeded", timeout=60)
    job = ExtractionJob.objects.get(public_id=job_id)
    assert job.sends == 2 and job.transcript is None and job.finished_at <= timezone.now()
    assert MemoryFact.objects.filter(subject_id="fault-kill").count() == 1
    assert FactEvent.objects.filter(subject_id="fault-kill", action="created").count() == 1
    assert second.process is not None and second.process.poll() is None, second.output()
