"""What extraction tells the metrics: each finished job's outcome and what became of the facts
the model proposed (counts only), and the age of the oldest unfinished job (a gauge read at
most once a minute, registered from `ExtractionConfig.ready()`)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Min
from django.utils import timezone

from memoryadmin.observability import metrics
from memoryadmin.observability.gauges import Reading, register_gauge_source

from .models import ExtractionJob, JobStatus

DISCARDED_PREFIX = "discarded"


def job_outcome(job: ExtractionJob) -> str:
    """succeeded / failed / skipped / discarded (succeeded, but a clear or a pause during the
    model call threw the batch away)."""
    if job.status == JobStatus.SUCCEEDED and job.reason.startswith(DISCARDED_PREFIX):
        return "discarded"
    return str(job.status)


def record_job(job: ExtractionJob | None) -> None:
    """Count a job that just ended (None, or a job still queued for a retry: nothing)."""
    if job is None or job.status not in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.SKIPPED):
        return
    outcome = job_outcome(job)
    metrics.count_extraction_job(outcome)
    metrics.count_write_filter_blocked("extraction", job.blocked)
    if outcome != "succeeded":
        return
    # `stored` counts new facts and held facts given a new value; `held_for_review` are the
    # possibly sensitive ones among them, held back from the agent until a reviewer decides.
    metrics.count_extraction_facts("stored", job.stored + job.updated - job.sent_to_review)
    metrics.count_extraction_facts("held_for_review", job.sent_to_review)
    metrics.count_extraction_facts("duplicate", job.duplicates)
    metrics.count_extraction_facts("blocked", job.blocked)
    metrics.count_extraction_facts("over_cap", job.cut_by_cap)


def queue_oldest() -> Iterable[Reading]:
    """`memoryadmin_extraction_queue_oldest_seconds`: the oldest job queued or running."""
    now = timezone.now()
    oldest = ExtractionJob.objects.filter(
        status__in=(JobStatus.QUEUED, JobStatus.RUNNING)
    ).aggregate(oldest=Min("queued_at"))["oldest"]
    return [((), max(0.0, (now - oldest).total_seconds()) if oldest else 0.0)]


def register() -> None:
    register_gauge_source("memoryadmin_extraction_queue_oldest_seconds", queue_oldest)
