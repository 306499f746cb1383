"""The Celery task in eager mode (the embedded default): retries, giving up, idempotency. The
real worker on Redis is exercised in test_worker_integration.py."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from memoryadmin.celery import app as celery_app
from memoryadmin.extraction import services
from memoryadmin.extraction.models import ExtractionJob, JobStatus
from memoryadmin.extraction.tasks import MAX_RETRIES, backoff_delay, extract_turn_task
from memoryadmin.facts import selectors
from memoryadmin.facts.models import FactEvent
from memoryadmin.testing.fake_anthropic import FakeAnthropic, api_error, tool_use
from tests.extraction.worker import publishing_to

pytestmark = pytest.mark.django_db

AISLE = {"key": "seat_preference", "value": "Prefers aisle seats", "category": "preference"}
MESSAGES = [{"role": "user", "text": "Aisle seat please, always."}]


def make_job(subject_id: str = "task-subject", turn_id: str = "turn-1") -> ExtractionJob:
    job, _ = services.job_create_or_get(
        subject_id=subject_id, session_tag="0123456789ab", turn_id=turn_id, messages=MESSAGES
    )
    return job


def run(job: ExtractionJob) -> ExtractionJob:
    extract_turn_task.apply(args=[job.pk])
    job.refresh_from_db()
    return job


def test_tasks_run_eagerly_without_a_broker() -> None:
    assert celery_app.conf.task_always_eager is True


def test_rate_limited_then_answered_stores_one_set_of_facts(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(api_error(429, retry_after=0), tool_use([AISLE]))
    job = run(make_job())
    assert job.status == JobStatus.SUCCEEDED
    assert job.attempts == 2
    assert job.stored == 1
    assert len(fake_anthropic.requests) == 2
    assert [fact.key for fact in selectors.subject_facts("task-subject")] == ["seat_preference"]
    assert FactEvent.objects.filter(subject_id="task-subject").count() == 1


@pytest.mark.parametrize("status", [500, 529, 503])
def test_server_errors_are_retried_five_times_then_the_job_fails(
    status: int, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.fallback = api_error(status)
    job = run(make_job())
    assert job.status == JobStatus.FAILED
    assert job.attempts == MAX_RETRIES + 1
    assert len(fake_anthropic.requests) == MAX_RETRIES + 1
    assert f"HTTP {status}" in job.reason and "gave up after 6 attempts" in job.reason
    assert job.model == selectors.memory_settings().memory_model  # which model it tried
    assert job.transcript is None
    assert selectors.subject_facts("task-subject") == []


def test_recovering_on_the_last_retry_succeeds(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(*[api_error(500)] * MAX_RETRIES, tool_use([AISLE]))
    job = run(make_job())
    assert job.status == JobStatus.SUCCEEDED and job.attempts == 6 and job.stored == 1


def test_unreachable_model_fails_after_retries(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.stop()
    job = run(make_job())
    assert job.status == JobStatus.FAILED
    assert "unreachable" in job.reason
    assert job.attempts == MAX_RETRIES + 1


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_permanent_errors_are_not_retried(status: int, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.fallback = api_error(status)
    job = run(make_job())
    assert job.status == JobStatus.FAILED
    assert job.attempts == 1 and len(fake_anthropic.requests) == 1
    assert f"HTTP {status}" in job.reason


def test_a_finished_job_is_not_run_again(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(tool_use([AISLE]))
    job = run(make_job())
    assert job.status == JobStatus.SUCCEEDED
    result = extract_turn_task.apply(args=[job.pk])
    assert result.get() == "not run"
    assert len(fake_anthropic.requests) == 1
    assert FactEvent.objects.filter(subject_id="task-subject").count() == 1


def test_turn_submit_queues_after_commit(
    fake_anthropic: FakeAnthropic, django_capture_on_commit_callbacks: Any
) -> None:
    fake_anthropic.script(tool_use([AISLE]))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job, created = services.turn_submit(
            subject_id="submitted",
            session_id="raw-session-secret",
            turn_id="t1",
            messages=MESSAGES,
            created_by_label="agent-host",
        )
    assert created and job.status == JobStatus.QUEUED
    assert fake_anthropic.requests == []  # nothing runs before the row is committed
    assert len(callbacks) == 1
    callbacks[0]()
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert job.session_tag == hashlib.sha256(b"raw-session-secret").hexdigest()[:12]
    assert [fact.source_session_id for fact in selectors.subject_facts("submitted")] == [
        job.session_tag
    ]


def test_backoff_is_exponential_capped_and_honours_retry_after(settings: Any) -> None:
    settings.ANTHROPIC_RETRY_BACKOFF_SECONDS = 2
    settings.ANTHROPIC_RETRY_BACKOFF_MAX_SECONDS = 300
    assert [backoff_delay(n) for n in range(6)] == [2, 4, 8, 16, 32, 64]
    assert backoff_delay(9) == 300
    assert backoff_delay(0, retry_after=30) == 30
    assert backoff_delay(3, retry_after=1) == 16
    assert backoff_delay(0, retry_after=10_000) == 300


def test_a_broker_outage_keeps_the_job_queued_with_its_transcript(
    fake_anthropic: FakeAnthropic, django_capture_on_commit_callbacks: Any
) -> None:
    """Not failed (as it once was, losing the turn for good): waiting to be sent again."""
    with publishing_to("redis://127.0.0.1:1/0"), django_capture_on_commit_callbacks(execute=True):
        job, created = services.turn_submit(
            subject_id="no-broker", session_id="s", turn_id="t1", messages=MESSAGES
        )
    assert created
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert job.reason == services.BROKER_DOWN_REASON
    assert job.transcript == MESSAGES
    assert (job.sent_at, job.sends) == (None, 0)
    assert fake_anthropic.requests == []
