"""Job state changes: idempotent creation, starting, finishing, forgetting."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from memoryadmin.extraction import services
from memoryadmin.extraction.models import ExtractionJob, JobStatus
from memoryadmin.facts import services as fact_services
from memoryadmin.facts.actors import Actor

pytestmark = pytest.mark.django_db

MESSAGES = [{"role": "user", "text": "Aisle please"}]


def create(
    subject_id: str = "svc", turn_id: str = "t1", tag: str = "aaaaaaaaaaaa"
) -> ExtractionJob:
    job, _ = services.job_create_or_get(
        subject_id=subject_id,
        session_tag=tag,
        turn_id=turn_id,
        messages=MESSAGES,
        created_by_label="token:host",
    )
    return job


def test_create_is_idempotent_per_subject_session_and_turn() -> None:
    first = create()
    again, created = services.job_create_or_get(
        subject_id="svc",
        session_tag="aaaaaaaaaaaa",
        turn_id="t1",
        messages=[{"role": "user", "text": "something else"}],
    )
    assert not created and again.pk == first.pk
    assert again.transcript == MESSAGES  # a replay does not overwrite the first transcript
    assert create(tag="bbbbbbbbbbbb").pk != first.pk
    assert create(turn_id="t2").pk != first.pk
    assert create(subject_id="other").pk != first.pk


def test_the_database_enforces_one_job_per_turn() -> None:
    create()
    with pytest.raises(IntegrityError), transaction.atomic():
        ExtractionJob.objects.create(subject_id="svc", session_tag="aaaaaaaaaaaa", turn_id="t1")


def test_born_skipped_keeps_no_transcript() -> None:
    job, created = services.job_create_or_get(
        subject_id="svc",
        session_tag="aaaaaaaaaaaa",
        turn_id="t9",
        messages=MESSAGES,
        skip_reason="memory is disabled",
    )
    assert created and job.status == JobStatus.SKIPPED and job.transcript is None
    assert job.finished_at is not None
    assert services.job_begin(job.pk, may_call=False) is None


@pytest.mark.parametrize("status", [JobStatus.SUCCEEDED, JobStatus.SKIPPED, JobStatus.FAILED])
def test_finishing_wipes_the_transcript_whatever_the_outcome(status: JobStatus) -> None:
    job = create()
    assert services.job_begin(job.pk, may_call=False).job.status == JobStatus.RUNNING
    services.job_finish(job.pk, status=status, reason="why", proposed=2, stored=1)
    job.refresh_from_db()
    assert job.status == status and job.transcript is None and job.finished_at is not None
    assert (job.proposed, job.stored, job.reason) == (2, 1, "why")


def test_a_finished_job_stays_finished() -> None:
    job = create()
    services.job_finish(job.pk, status=JobStatus.SUCCEEDED, stored=1)
    services.job_finish(job.pk, status=JobStatus.FAILED, reason="late failure")
    services.job_requeue(job.pk, reason="late retry")
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.reason == "" and job.stored == 1
    assert services.job_begin(job.pk, may_call=False) is None


def test_finish_refuses_non_final_status_and_unknown_fields() -> None:
    job = create()
    with pytest.raises(ValueError):
        services.job_finish(job.pk, status=JobStatus.RUNNING)
    with pytest.raises(ValueError):
        services.job_finish(job.pk, status=JobStatus.FAILED, transcript=["x"])


def test_requeue_after_a_transient_failure() -> None:
    job = create()
    services.job_begin(job.pk, may_call=True)
    services.job_requeue(job.pk, reason="model API error: HTTP 429 (rate_limit_error)")
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.attempts == 1 and "429" in job.reason
    started = services.job_begin(job.pk, may_call=False)
    assert started is not None and started.job.started_at >= job.started_at  # the latest start


def test_forget_subject_wipes_only_that_subjects_transcripts() -> None:
    queued = create("forget-me", "t1")
    running = create("forget-me", "t2")
    services.job_begin(running.pk, may_call=False)
    other = create("keep-me", "t1")
    held = ExtractionJob.objects.filter(subject_id="forget-me", transcript__isnull=False)
    assert held.count() == 2
    fact_services.subject_forget(subject_id="forget-me", actor=Actor.customer("forget-me"))
    assert ExtractionJob.objects.get(pk=queued.pk).transcript is None
    assert ExtractionJob.objects.get(pk=running.pk).transcript is None
    assert ExtractionJob.objects.get(pk=other.pk).transcript == MESSAGES
    assert held.count() == 0


def test_reasons_are_sanitized_and_bounded() -> None:
    job = create()
    services.job_finish(job.pk, status=JobStatus.FAILED, reason="bad\x00 thing\n" + "x" * 900)
    job.refresh_from_db()
    assert job.reason.startswith("bad thing x") and len(job.reason) == 500


def test_stale_jobs_are_failed_and_their_transcripts_wiped() -> None:
    from datetime import timedelta

    from django.utils import timezone

    from memoryadmin.extraction.tasks import fail_stale_jobs_task

    old, fresh = create(turn_id="old"), create(turn_id="fresh")
    done = create(turn_id="done")
    services.job_finish(done.pk, status=JobStatus.SUCCEEDED)
    ExtractionJob.objects.filter(pk__in=[old.pk, done.pk]).update(
        queued_at=timezone.now() - timedelta(days=2)
    )
    assert fail_stale_jobs_task.delay().get() == 1
    old.refresh_from_db()
    fresh.refresh_from_db()
    done.refresh_from_db()
    assert (old.status, old.transcript, old.reason, old.retryable) == (
        JobStatus.FAILED,
        None,
        services.STALE_JOB_REASON,
        True,
    )
    assert (fresh.status, fresh.transcript) == (JobStatus.QUEUED, MESSAGES)
    assert done.status == JobStatus.SUCCEEDED
    assert services.jobs_fail_stale(older_than=timedelta(minutes=60)) == 0  # idempotent


@pytest.mark.django_db(transaction=True)
def test_job_succeed_refuses_a_moved_generation_and_the_facts_roll_back_with_it() -> None:
    """The end of a job and its facts commit together or not at all: the refusal is an error
    raised when the write's last round trip (with its COMMIT) comes back."""
    from memoryadmin.facts import selectors as fact_selectors
    from memoryadmin.facts import services as fact_services
    from memoryadmin.facts.actors import Actor

    job = create(subject_id="guarded")
    run = services.job_begin(job.pk, may_call=True, model="m")
    assert run is not None

    def end(generation: int):
        def end_job(result: fact_services.UpsertResult) -> None:
            services.job_succeed(run.job, purge_generation=generation, stored=len(result.created))

        return end_job

    with pytest.raises(Exception) as refused:
        fact_services.fact_upsert(
            subject_id="guarded",
            facts=[fact_services.FactDraft("seat_preference", "Aisle")],
            actor=Actor.extraction(),
            before_commit=end(run.purge_generation + 1),
        )
    assert services.job_not_ended(refused.value)
    assert fact_selectors.subject_facts("guarded") == []
    assert ExtractionJob.objects.get(pk=job.pk).status == JobStatus.RUNNING

    fact_services.fact_upsert(
        subject_id="guarded",
        facts=[fact_services.FactDraft("seat_preference", "Aisle")],
        actor=Actor.extraction(),
        before_commit=end(run.purge_generation),
    )
    ended = ExtractionJob.objects.get(pk=job.pk)
    assert (ended.status, ended.stored, ended.transcript) == (JobStatus.SUCCEEDED, 1, None)
    assert [fact.key for fact in fact_selectors.subject_facts("guarded")] == ["seat_preference"]
    # A job already ended is refused as well: facts are written once per job.
    with pytest.raises(Exception) as again:
        fact_services.fact_upsert(
            subject_id="guarded",
            facts=[fact_services.FactDraft("meal_note", "Vegan")],
            actor=Actor.extraction(),
            before_commit=end(run.purge_generation),
        )
    assert services.job_not_ended(again.value)
    assert [fact.key for fact in fact_selectors.subject_facts("guarded")] == ["seat_preference"]


def test_job_not_ended_recognizes_only_the_refusal() -> None:
    from django.db import DatabaseError

    assert not services.job_not_ended(DatabaseError("something else"))
    assert not services.job_not_ended(ValueError("no"))
