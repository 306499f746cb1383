"""No turn is lost: a job the broker never got, or lost, or whose worker died, is sent again by
the reaper on beat while sends remain; its facts are stored once; a dead job comes back to life
when its turn is posted again. (Tasks run eagerly here: "sent" means "ran in-process".)"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from memoryadmin.extraction import services
from memoryadmin.extraction.models import ExtractionJob, JobStatus
from memoryadmin.extraction.tasks import reap_jobs_task
from memoryadmin.facts.models import FactEvent, MemoryFact
from memoryadmin.testing.fake_anthropic import FakeAnthropic, tool_use
from tests.extraction.worker import publishing_to

pytestmark = pytest.mark.django_db

AISLE = {"key": "seat_preference", "value": "Prefers aisle seats", "category": "preference"}
MESSAGES = [{"role": "user", "text": "Aisle seat please, always."}]
DOWN = "redis://127.0.0.1:1/0"  # nothing listens there


def submit(turn_id: str = "t1", subject_id: str = "reap-me") -> ExtractionJob:
    job, _ = services.turn_submit(
        subject_id=subject_id, session_id="s", turn_id=turn_id, messages=MESSAGES
    )
    return job


def age(job: ExtractionJob, **fields: Any) -> ExtractionJob:
    ExtractionJob.objects.filter(pk=job.pk).update(**fields)
    job.refresh_from_db()
    return job


@pytest.fixture
def quick(settings: Any) -> Any:
    settings.EXTRACTION_RESEND_AFTER_SECONDS = 0
    settings.EXTRACTION_JOB_DEADLINE_SECONDS = 60
    settings.EXTRACTION_MAX_SENDS = 3
    return settings


def test_a_job_posted_while_the_broker_was_down_is_sent_by_the_reaper(
    fake_anthropic: FakeAnthropic, django_capture_on_commit_callbacks: Any, quick: Any
) -> None:
    fake_anthropic.script(tool_use([AISLE]))
    with publishing_to(DOWN), django_capture_on_commit_callbacks(execute=True):
        job = submit()
    assert ExtractionJob.objects.get(pk=job.pk).status == JobStatus.QUEUED

    with django_capture_on_commit_callbacks(execute=True):
        outcome = reap_jobs_task.apply().get()

    job.refresh_from_db()
    assert outcome == {"sent": 1, "unsent": 0, "failed": 0}
    assert job.status == JobStatus.SUCCEEDED and job.sends == 1 and job.reason == ""
    assert MemoryFact.objects.filter(subject_id="reap-me").count() == 1


def test_while_the_broker_stays_down_the_reaper_keeps_the_job_queued(
    fake_anthropic: FakeAnthropic, django_capture_on_commit_callbacks: Any, quick: Any
) -> None:
    with publishing_to(DOWN), django_capture_on_commit_callbacks(execute=True):
        job = submit()
        outcome = services.jobs_reap()

    job.refresh_from_db()
    assert outcome == {"sent": 0, "unsent": 1, "failed": 0}
    assert (job.status, job.transcript, job.sends) == (JobStatus.QUEUED, MESSAGES, 0)


def test_a_fresh_unsent_job_is_left_alone(
    settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """The web process is still sending it; the reaper must not race it."""
    settings.EXTRACTION_RESEND_AFTER_SECONDS = 300
    with publishing_to(DOWN), django_capture_on_commit_callbacks(execute=True):
        submit()

    assert services.jobs_reap() == {"sent": 0, "unsent": 0, "failed": 0}


def test_posting_the_turn_again_retries_an_unsent_job(
    fake_anthropic: FakeAnthropic, django_capture_on_commit_callbacks: Any
) -> None:
    fake_anthropic.script(tool_use([AISLE]))
    with publishing_to(DOWN), django_capture_on_commit_callbacks(execute=True):
        first = submit()

    with django_capture_on_commit_callbacks(execute=True):
        again, created = services.turn_submit(
            subject_id="reap-me", session_id="s", turn_id="t1", messages=MESSAGES
        )

    assert not created and again.pk == first.pk
    assert ExtractionJob.objects.get(pk=first.pk).status == JobStatus.SUCCEEDED


def test_a_running_job_past_its_deadline_is_sent_again_and_its_facts_stored_once(
    fake_anthropic: FakeAnthropic, django_capture_on_commit_callbacks: Any, quick: Any
) -> None:
    """The worker died mid-job (its main process: nothing acknowledged, nothing reported)."""
    fake_anthropic.script(tool_use([AISLE]))
    job = submit()  # not run: on_commit callbacks were not executed
    services.job_begin(job.pk, may_call=False)
    job = age(
        job,
        started_at=timezone.now() - timedelta(minutes=5),
        sends=1,
        sent_at=timezone.now() - timedelta(minutes=5),
    )

    with django_capture_on_commit_callbacks(execute=True):
        outcome = services.jobs_reap()
        again = services.jobs_reap()  # a second run finds nothing left to do

    job.refresh_from_db()
    assert outcome == {"sent": 1, "unsent": 0, "failed": 0}
    assert again == {"sent": 0, "unsent": 0, "failed": 0}
    assert job.status == JobStatus.SUCCEEDED and job.sends == 2
    assert FactEvent.objects.filter(subject_id="reap-me", action="created").count() == 1


def test_a_running_job_within_its_deadline_is_left_to_its_worker(
    fake_anthropic: FakeAnthropic, quick: Any
) -> None:
    job = submit()
    services.job_begin(job.pk, may_call=False)

    assert services.jobs_reap() == {"sent": 0, "unsent": 0, "failed": 0}
    assert ExtractionJob.objects.get(pk=job.pk).status == JobStatus.RUNNING


def test_a_job_that_kept_losing_its_worker_fails_retryable_and_a_repost_revives_it(
    fake_anthropic: FakeAnthropic, django_capture_on_commit_callbacks: Any, quick: Any
) -> None:
    job = submit()
    services.job_begin(job.pk, may_call=False)
    age(job, started_at=timezone.now() - timedelta(minutes=5), sends=3)

    outcome = services.jobs_reap()

    job.refresh_from_db()
    assert outcome == {"sent": 0, "unsent": 0, "failed": 1}
    assert (job.status, job.retryable, job.transcript) == (JobStatus.FAILED, True, None)
    assert "3 times" in job.reason

    fake_anthropic.script(tool_use([AISLE]))
    with django_capture_on_commit_callbacks(execute=True):
        revived, created = services.turn_submit(
            subject_id="reap-me", session_id="s", turn_id="t1", messages=MESSAGES
        )
    job.refresh_from_db()
    assert created and revived.pk == job.pk
    assert job.status == JobStatus.SUCCEEDED
    assert MemoryFact.objects.filter(subject_id="reap-me").count() == 1


def test_a_failure_that_was_the_turns_own_is_not_revived(fake_anthropic: FakeAnthropic) -> None:
    job = submit()
    services.job_finish(job.pk, status=JobStatus.FAILED, reason="model API error: HTTP 400")

    again, created = services.turn_submit(
        subject_id="reap-me", session_id="s", turn_id="t1", messages=MESSAGES
    )

    assert not created and again.status == JobStatus.FAILED


def test_a_queued_job_the_broker_lost_is_sent_again(
    fake_anthropic: FakeAnthropic, django_capture_on_commit_callbacks: Any, quick: Any
) -> None:
    """Sent, never started, and older than the broker keeps an unacknowledged message."""
    fake_anthropic.script(tool_use([AISLE]))
    job = submit()
    lost = timezone.now() - timedelta(seconds=quick.BROKER_VISIBILITY_TIMEOUT_SECONDS + 1)
    age(job, sent_at=lost, sends=1)

    with django_capture_on_commit_callbacks(execute=True):
        assert services.jobs_reap()["sent"] == 1

    assert ExtractionJob.objects.get(pk=job.pk).status == JobStatus.SUCCEEDED


def test_beat_runs_the_reaper_every_minute() -> None:
    entry = django_settings.CELERY_BEAT_SCHEDULE["reap-extraction-jobs"]

    assert entry["task"] == "memoryadmin.extraction.tasks.reap_jobs_task"
    assert entry["schedule"] <= 60


def test_the_visibility_timeout_outlasts_the_longest_job() -> None:
    """Redis re-delivers a message unacknowledged for this long: a healthy job (its longest
    retry countdown plus a run) must never reach it, or it would run twice."""
    s = django_settings
    transport = s.CELERY_BROKER_TRANSPORT_OPTIONS

    assert s.CELERY_TASK_ACKS_LATE and s.CELERY_TASK_REJECT_ON_WORKER_LOST
    assert transport["visibility_timeout"] == s.BROKER_VISIBILITY_TIMEOUT_SECONDS
    assert s.BROKER_VISIBILITY_TIMEOUT_SECONDS >= (
        s.ANTHROPIC_RETRY_BACKOFF_MAX_SECONDS + s.EXTRACTION_JOB_DEADLINE_SECONDS
    )
    assert s.EXTRACTION_JOB_DEADLINE_SECONDS > s.ANTHROPIC_TIMEOUT_SECONDS
