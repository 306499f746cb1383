"""Reads of extraction jobs for the API, the worker and the staff pages."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.conf import settings

from memoryadmin.facts import selectors as fact_selectors

from .models import FINISHED_STATUSES, ExtractionJob, JobStatus

_MAX_ID = 2**63 - 1  # bigint; a larger id in a URL must be a 404, not a database error


def job_for_poster(public_id: str, *, created_by_label: str) -> ExtractionJob | None:
    """The job with this public id, if it was posted under this label (a token's name): a
    host may read its own turns' jobs, not another host's. Anything else is "no such job"."""
    try:
        wanted = uuid.UUID(public_id)
    except (ValueError, AttributeError, TypeError):
        return None
    return ExtractionJob.objects.filter(public_id=wanted, created_by_label=created_by_label).first()


def job_is_finished(job_id: int) -> bool:
    """True when the job ended (or is gone): a later delivery of it must not write again."""
    status = ExtractionJob.objects.filter(pk=job_id).values_list("status", flat=True).first()
    return status is None or status in FINISHED_STATUSES


def jobs_for_subject(subject_id: str, *, limit: int = 20) -> list[ExtractionJob]:
    """A traveller's newest extraction jobs for the staff page (never the transcript)."""
    return list(
        ExtractionJob.objects.filter(subject_id=subject_id)
        .defer("transcript")
        .order_by("-queued_at", "-id")[:limit]
    )


def skip_reason(subject_id: str) -> str | None:
    """Why nothing may be learned from this subject's turns right now, or None."""
    if not fact_selectors.memory_settings().memory_enabled:
        return "memory is disabled"
    subject = fact_selectors.subject_get(subject_id)
    if subject is not None and subject.memory_paused:
        return "the traveller paused learning"
    if not settings.ANTHROPIC_API_KEY:
        return "no model configured (ANTHROPIC_API_KEY is empty)"
    return None


def subjects_with_jobs_failed_since(since: datetime):  # noqa: ANN201 - a values() queryset
    """The travellers whose jobs failed at or after `since`, as a subquery (staff list filter)."""
    return ExtractionJob.objects.filter(status=JobStatus.FAILED, finished_at__gte=since).values(
        "subject_id"
    )


def jobs_failed_since(since: datetime) -> int:
    """How many jobs failed at or after `since` (the staff overview's count): one query."""
    return ExtractionJob.objects.filter(status=JobStatus.FAILED, finished_at__gte=since).count()
