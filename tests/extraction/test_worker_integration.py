"""A real Celery worker on Redis, the real API, the real SDK against the fake Messages server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from rest_framework.test import APIClient

from memoryadmin.api.tokens import token_issue
from memoryadmin.extraction.models import ExtractionJob
from memoryadmin.facts.models import FactEvent
from memoryadmin.testing.fake_anthropic import FakeAnthropic, api_error, tool_use
from tests.extraction.worker import Worker, publishing_to, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

AISLE = {"key": "seat_preference", "value": "Prefers aisle seats", "category": "preference"}
FINISHED = {"succeeded", "skipped", "failed"}


@pytest.fixture(scope="module")
def broker_url() -> str:
    return os.environ["TEST_BROKER_URL"]


@pytest.fixture(scope="module")
def model_server() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def worker(
    django_db_setup: Any, django_db_blocker: Any, broker_url: str, model_server: FakeAnthropic
) -> Iterator[Worker]:
    redis.Redis.from_url(broker_url).flushdb()  # no task left over from an earlier run
    with django_db_blocker.unblock():
        running = Worker(
            broker_url=broker_url,
            env={
                "ANTHROPIC_API_KEY": "sk-ant-test-fake",
                "ANTHROPIC_BASE_URL": model_server.base_url,
                "ANTHROPIC_TIMEOUT_SECONDS": "5",
                "ANTHROPIC_RETRY_BACKOFF_SECONDS": "0.05",
                "ANTHROPIC_RETRY_BACKOFF_MAX_SECONDS": "0.2",
            },
        ).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def live(
    worker: Worker, model_server: FakeAnthropic, broker_url: str, settings: Any
) -> Iterator[FakeAnthropic]:
    """This process publishes to the worker's broker; the fake model starts each test empty."""
    settings.ANTHROPIC_API_KEY = "sk-ant-test-fake"
    settings.ANTHROPIC_BASE_URL = model_server.base_url
    model_server.reset()
    with publishing_to(broker_url):
        yield model_server
    assert worker.process is not None and worker.process.poll() is None, worker.output()


def agent() -> APIClient:
    _, secret = token_issue(name="integration-host", scopes=["turns:write", "memory:read"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def body(turn_id: str = "turn-1") -> dict[str, Any]:
    return {
        "session_id": "integration-session",
        "turn_id": turn_id,
        "messages": [
            {"role": "user", "text": "I always take the aisle."},
            {"role": "assistant", "text": "Aisle it is."},
        ],
    }


def job_of(client: APIClient, job_id: str) -> dict[str, Any]:
    response = client.get(f"/api/v1/jobs/{job_id}")
    assert response.status_code == 200
    return response.json()


def finished(client: APIClient, job_id: str) -> dict[str, Any]:
    return wait_for(lambda: (job := job_of(client, job_id))["status"] in FINISHED and job)


def test_posted_turn_goes_queued_running_succeeded(live: FakeAnthropic) -> None:
    live.script(tool_use([AISLE], delay=1.0))  # slow enough to watch it run
    client = agent()

    response = client.post("/api/v1/subjects/int-1/turns", body(), format="json")

    assert response.status_code == 202
    # The status is read after the job was handed to the broker: a quick worker may have it.
    assert response.json()["status"] in {"queued", "running"}
    job_id = response.json()["job_id"]
    wait_for(lambda: job_of(client, job_id)["status"] == "running")
    job = finished(client, job_id)
    assert job["status"] == "succeeded"
    assert job["counts"]["stored"] == 1 and job["attempts"] == 1
    facts = client.get("/api/v1/subjects/int-1/facts").json()["facts"]
    assert [(f["key"], f["value"]) for f in facts] == [("seat_preference", "Prefers aisle seats")]
    assert ExtractionJob.objects.get(public_id=job_id).transcript is None


def test_rate_limit_then_success_stores_one_set_of_facts(live: FakeAnthropic) -> None:
    live.script(api_error(429, retry_after=0), tool_use([AISLE]))
    client = agent()
    job_id = client.post("/api/v1/subjects/int-2/turns", body(), format="json").json()["job_id"]

    job = finished(client, job_id)

    assert job["status"] == "succeeded"
    assert job["attempts"] == 2
    assert len(live.requests) == 2
    facts = client.get("/api/v1/subjects/int-2/facts").json()["facts"]
    assert [f["key"] for f in facts] == ["seat_preference"]
    assert FactEvent.objects.filter(subject_id="int-2").count() == 1


def test_turn_replayed_five_times_gives_one_job(live: FakeAnthropic) -> None:
    live.script(tool_use([AISLE], delay=0.3))
    client = agent()
    responses = [
        client.post("/api/v1/subjects/int-3/turns", body(), format="json") for _ in range(6)
    ]
    assert [r.status_code for r in responses] == [202, 200, 200, 200, 200, 200]
    assert len({r.json()["job_id"] for r in responses}) == 1
    job = finished(client, responses[0].json()["job_id"])
    assert job["status"] == "succeeded"
    assert ExtractionJob.objects.filter(subject_id="int-3").count() == 1
    assert len(live.requests) == 1
    assert FactEvent.objects.filter(subject_id="int-3").count() == 1


def test_model_down_the_turn_is_accepted_and_the_job_fails(live: FakeAnthropic) -> None:
    live.fallback = api_error(500)
    client = agent()
    response = client.post("/api/v1/subjects/int-4/turns", body(), format="json")
    assert response.status_code == 202
    job = finished(client, response.json()["job_id"])
    assert job["status"] == "failed"
    assert job["attempts"] == 6 and "gave up after 6 attempts" in job["reason"]
    assert client.get("/api/v1/subjects/int-4/facts").json()["facts"] == []


def test_a_turns_receipts_and_the_assistants_quote_are_handled_by_the_worker(
    live: FakeAnthropic,
) -> None:
    """Issue 21: the `used` member rides on the job and the worker records it; save_memory's
    quote, found in the traveller's message of the posted turn, becomes their words."""
    from memoryadmin.facts import selectors
    from memoryadmin.facts import services as fact_services
    from memoryadmin.facts.actors import Actor
    from memoryadmin.usage.models import MemoryUse

    fact_services.fact_upsert(
        subject_id="int-use",
        actor=Actor.agent("integration-host"),
        facts=[
            fact_services.FactDraft(
                "seat_preference", "Prefers aisle seats", evidence="I always take the aisle"
            )
        ],
    )
    live.script(tool_use([]))
    client = agent()
    response = client.post(
        "/api/v1/subjects/int-use/turns",
        {
            **body(),
            "used": {"injected": ["seat_preference"], "recalled": ["unknown"]},
        },
        format="json",
    )
    assert response.status_code == 202
    assert finished(client, response.json()["job_id"])["status"] == "succeeded"
    assert list(MemoryUse.objects.filter(subject_id="int-use").values_list("how", "turn_id")) == [
        ("injected", "turn-1")
    ]
    assert ExtractionJob.objects.get(subject_id="int-use").used is None
    fact = selectors.subject_fact("int-use", "seat_preference")
    assert (fact.evidence, fact.evidence_origin) == ("I always take the aisle", "extraction")
