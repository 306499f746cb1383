"""The Celery side of extraction: run a job, retry the model's transient failures with
exponential backoff, give up (and say so on the job) after five retries."""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings

from memoryadmin.observability.metrics import count_extraction_job

from . import services
from .metrics import record_job
from .models import JobStatus
from .runtime import TransientModelError, extract_turn

logger = logging.getLogger(__name__)

MAX_RETRIES = 5


def backoff_delay(retries: int, retry_after: float | None = None) -> float:
    """base * 2^retries seconds, capped; a server's retry-after is honoured up to the cap."""
    base = float(settings.ANTHROPIC_RETRY_BACKOFF_SECONDS)
    cap = float(settings.ANTHROPIC_RETRY_BACKOFF_MAX_SECONDS)
    delay = min(cap, base * (2**retries))
    if retry_after is not None:
        delay = max(delay, min(cap, retry_after))
    return delay


@shared_task(bind=True, max_retries=MAX_RETRIES, acks_late=True, ignore_result=True)
def extract_turn_task(self, job_id: int) -> str:
    """Idempotent: a finished job is not run again, and facts are written once, at the end,
    in the same transaction that finishes the job."""
    try:
        job = extract_turn(job_id)
    except TransientModelError as exc:
        attempt = self.request.retries + 1
        if self.request.retries >= MAX_RETRIES:
            logger.warning("extraction job %s gave up after %d attempts", job_id, attempt)
            record_job(
                services.job_finish(
                    job_id,
                    status=JobStatus.FAILED,
                    reason=f"{exc.reason}; gave up after {attempt} attempts",
                    retryable=True,
                )
            )
            return JobStatus.FAILED.value
        delay = backoff_delay(self.request.retries, exc.retry_after)
        logger.info(
            "extraction job %s: %s; retry %d of %d in %.1fs",
            job_id,
            exc.reason,
            attempt,
            MAX_RETRIES,
            delay,
        )
        services.job_requeue(
            job_id, reason=f"{exc.reason}; retry {attempt} of {MAX_RETRIES} scheduled"
        )
        raise self.retry(countdown=delay) from None
    record_job(job)
    return job.status if job is not None else "not run"


@shared_task(ignore_result=True)
def fail_stale_jobs_task() -> int:
    """Periodic (Celery beat): end jobs no worker finished within EXTRACTION_STALE_AFTER_MINUTES."""
    failed = services.jobs_fail_stale(
        older_than=timedelta(minutes=settings.EXTRACTION_STALE_AFTER_MINUTES)
    )
    for _ in range(failed):
        count_extraction_job("failed")
    return failed


@shared_task(ignore_result=True)
def reap_jobs_task() -> dict[str, int]:
    """Periodic (Celery beat): re-send jobs the broker never got or lost, and jobs whose worker
    died mid-run (see `services.jobs_reap`)."""
    return services.jobs_reap()
