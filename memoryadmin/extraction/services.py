"""Every change to an ExtractionJob, each in one transaction. Jobs are not facts, so these write
no FactEvent; the facts a job yields are written by `facts.services.fact_upsert`."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from memoryadmin.db import hot_cursor
from memoryadmin.facts.validation import clean_reason, sanitize_text, session_tag

from .models import FINISHED_STATUSES, ExtractionJob, JobStatus
from .prompts import PROMPT_VERSION
from .selectors import skip_reason
from .sql import (
    SQL_BEGIN,
    SQL_BEGIN_IN_TRANSACTION,
    SQL_ERASE_TRANSCRIPTS,
    SQL_SUCCEED,
    SUCCESS_COUNTS,
)

logger = logging.getLogger(__name__)

_COUNTERS = frozenset({*SUCCESS_COUNTS, "model"})


@transaction.atomic
def job_create_or_get(
    *,
    subject_id: str,
    session_tag: str,
    turn_id: str,
    messages: Sequence[dict[str, str]],
    created_by_label: str = "",
    skip_reason: str | None = None,
    used: dict[str, list[str]] | None = None,
) -> tuple[ExtractionJob, bool]:
    """The job for this turn, created if new. A replay returns the first job untouched, except
    a job that failed for a reason outside the turn (`retryable`): posting the turn again puts
    it back in the queue with the transcript just sent, so a turn is never stuck on a dead job.

    With `skip_reason` the job is born skipped and the transcript is never stored. The second
    value is True when the job (re)entered the queue or was born skipped.

    `used`, the turn's use receipts, is stored on a new job only (a replay's were stored the
    first time), in the same INSERT: the usage app records them off the request."""
    existing = (
        ExtractionJob.objects.select_for_update()
        .filter(subject_id=subject_id, session_tag=session_tag, turn_id=turn_id)
        .first()
    )
    if existing is not None:
        if existing.status == JobStatus.FAILED and existing.retryable and skip_reason is None:
            existing.status = JobStatus.QUEUED
            existing.reason = clean_reason(f"posted again after: {existing.reason}")
            existing.transcript = _transcript(messages)
            existing.retryable = False
            existing.finished_at = None
            existing.sent_at = None
            existing.sends = 0
            existing.save(
                update_fields=[
                    "status",
                    "reason",
                    "transcript",
                    "retryable",
                    "finished_at",
                    "sent_at",
                    "sends",
                ]
            )
            return existing, True
        return existing, False
    now = timezone.now()
    job = ExtractionJob(
        subject_id=subject_id,
        session_tag=session_tag,
        turn_id=turn_id,
        created_by_label=created_by_label[:200],
        queued_at=now,
        used=used or None,
    )
    if skip_reason is None:
        job.transcript = _transcript(messages)
    else:
        job.status = JobStatus.SKIPPED
        job.reason = clean_reason(skip_reason)
        job.finished_at = now
    try:
        with transaction.atomic():
            job.save(force_insert=True)
    except IntegrityError:  # a concurrent replay won the insert
        return ExtractionJob.objects.get(
            subject_id=subject_id, session_tag=session_tag, turn_id=turn_id
        ), False
    return job, True


def _transcript(messages: Sequence[dict[str, str]]) -> list[dict[str, str]]:
    # Sanitized on the way in: PostgreSQL refuses NUL and lone surrogates in JSON, and the
    # model only ever sees sanitized text anyway.
    return [{"role": str(m["role"]), "text": sanitize_text(str(m["text"]))} for m in messages]


def turn_submit(
    *,
    subject_id: str,
    session_id: str,
    turn_id: str,
    messages: Sequence[dict[str, str]],
    created_by_label: str = "",
    used: dict[str, list[str]] | None = None,
) -> tuple[ExtractionJob, bool]:
    """Record a finished turn and queue its extraction once the row is committed. Only the
    session's 12-hex tag is kept. Learning that is off never stores the transcript at all.
    The turn's use receipts (`used`) ride on the job's row (see `job_uses_take`).

    A replay of a turn whose job is still waiting for the broker tries to send it again. The
    job returned is read after that, so its status says what really happened."""
    reason = skip_reason(subject_id)
    job, created = job_create_or_get(
        subject_id=subject_id,
        session_tag=session_tag(session_id),
        turn_id=turn_id,
        messages=messages,
        created_by_label=created_by_label,
        skip_reason=reason,
        used=used,
    )
    if created and reason is not None:
        logger.info("extraction job %s skipped: %s", job.pk, reason)
    if job.status == JobStatus.QUEUED and (created or job.sent_at is None):
        job_id = job.pk
        transaction.on_commit(lambda: job_enqueue(job_id))
        # Outside a transaction on_commit has run already; inside one, it runs on commit.
        if not transaction.get_connection().in_atomic_block:
            job = ExtractionJob.objects.get(pk=job_id)
    return job, created


BROKER_DOWN_REASON = (
    "waiting for the broker (unreachable when the turn was posted); it is sent again automatically"
)


# What hands a job to Celery (tasks.extract_turn_task, set from ExtractionConfig.ready()): the
# tasks call these services, so the services must not import the tasks.
_job_sender: Callable[[int], object] | None = None


def job_sender_set(send: Callable[[int], object] | None) -> None:
    """Name what queues a job's extraction (the app's ready() does, once)."""
    global _job_sender
    _job_sender = send


# What records the use receipts riding on a job (usage.services.uses_take_from_jobs, set from
# UsageConfig.ready()): usage sits above extraction, so extraction only calls it.
_uses_taker: Callable[[int], object] | None = None


def job_uses_taker_set(take: Callable[[int], object] | None) -> None:
    global _uses_taker
    _uses_taker = take


def job_uses_take(job_id: int) -> None:
    """Record the receipts that rode with this job (extract_turn does, when job_begin read
    some, before the model call). Never fails the job: a failure leaves them for the usage
    app's sweep."""
    if _uses_taker is None:
        return
    try:
        _uses_taker(job_id)
    except Exception as exc:  # noqa: BLE001 - receipts never fail a turn
        logger.warning("use receipts of job %s left for the sweep: %s", job_id, type(exc).__name__)


def job_enqueue(job_id: int) -> bool:
    """Hand the job to Celery and note when. A broker outage leaves the job queued, unsent; the
    reaper on beat (`jobs_reap`) sends it again. It never fails the job or the turn."""
    try:
        if _job_sender is None:
            raise RuntimeError("no job sender: the extraction app is not ready")
        _job_sender(job_id)
    except Exception as exc:  # noqa: BLE001 - any broker error must stay inside memory
        logger.error("extraction job %s could not be queued: %s", job_id, type(exc).__name__)
        ExtractionJob.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(
            reason=BROKER_DOWN_REASON
        )
        return False
    ExtractionJob.objects.filter(pk=job_id).update(sent_at=timezone.now(), sends=F("sends") + 1)
    ExtractionJob.objects.filter(pk=job_id, reason=BROKER_DOWN_REASON).update(reason="")
    return True


@transaction.atomic
def job_requeue(job_id: int, *, reason: str) -> None:
    """Back to the queue after a transient failure; the reason says what went wrong."""
    ExtractionJob.objects.filter(pk=job_id, status=JobStatus.RUNNING).update(
        status=JobStatus.QUEUED, reason=clean_reason(reason), sent_at=timezone.now()
    )


# --- one turn's bookkeeping in as few statements as it takes (the hot path of a worker) -------
#
# A turn used to cost 4 transactions and about 16 statements of bookkeeping around the one
# fact write. Two fixed statements do the same: one that starts the job and reads all its
# extraction needs, and one, in the transaction that writes the facts, that ends it with the
# purge-generation check. They read the facts tables directly (extraction sits above facts, so
# it may).

# The statements are `extraction/sql.py`'s; the job's fields come back in the model's order.
_JOB_FIELDS = ExtractionJob._meta.concrete_fields
# Ends the job, or refuses: SQL_SUCCEED raises this SQLSTATE (the guard function of migration
# 0003) when it matched nothing.
JOB_NOT_ENDED = "MA001"


def job_not_ended(exc: BaseException) -> bool:
    """Whether `exc` is job_succeed's refusal (a clear moved the purge generation, or another
    delivery of the job finished it first: `job_selectors.job_is_finished` tells which): the
    guard's error, which surfaces wherever the statement's round trip ends (at the write's
    COMMIT)."""
    return isinstance(exc, DatabaseError) and getattr(exc.__cause__, "sqlstate", None) == (
        JOB_NOT_ENDED
    )


def _job_from_row(row: Sequence[Any]) -> ExtractionJob:
    values = list(row[: len(_JOB_FIELDS)])
    for index, field in enumerate(_JOB_FIELDS):
        if field.name in ("transcript", "used") and isinstance(values[index], str):
            values[index] = json.loads(values[index])  # jsonb reaches Django's cursors as text
    return ExtractionJob.from_db(connection.alias, [field.attname for field in _JOB_FIELDS], values)


@dataclass(frozen=True)
class JobRun:
    """A job just marked running, with everything its extraction reads, from one snapshot."""

    job: ExtractionJob
    purge_generation: int
    learning_paused: bool
    held: list[tuple[str, str, str, str]]  # (key, value, category, status), by category, key
    # save_memory's quotes waiting for a posted turn (key, quote): see sql.AGENT_QUOTES.
    agent_quotes: list[tuple[str, str]] = dataclass_field(default_factory=list)


def job_begin(job_id: int, *, may_call: bool, model: str = "") -> JobRun | None:
    """Mark the job running (the latest start: the reaper's deadline counts from it) and, when
    the model is about to be called, count the attempt and note the model, in one statement
    that also reads the subject's purge generation, its pause switch, the transcript and every
    held fact (pending and expired too). None when the job is missing or finished.

    `may_call` says the airline-wide checks passed (memory on, a model configured, a valid
    write filter); the attempt is counted (before the call, so retries show even if the worker
    dies) only when, on top of that, learning is not paused and a transcript is left. One
    snapshot: a clear that wipes the transcript and bumps the generation is either wholly seen
    or caught by the generation check of `job_succeed`.

    Its commit does not wait for the WAL flush (an fsync: about 4 ms on the bench machine,
    longer than the rest of the statement): it is visible at once and survives the worker, and
    the next synchronous commit (the one that writes the facts) flushes it too. Only a crash of
    PostgreSQL itself within a fraction of a second could lose it, and then the job is simply
    queued again, with one attempt fewer, for the reaper to re-send. Inside a caller's
    transaction the caller's commit decides."""
    sql = SQL_BEGIN_IN_TRANSACTION if connection.in_atomic_block else SQL_BEGIN
    with hot_cursor() as cursor:
        cursor.execute(
            sql,
            {
                "job": job_id,
                "now": timezone.now(),
                "may_call": may_call,
                "model": model[:100],
                "prompt_version": PROMPT_VERSION,
            },
        )
        row = cursor.fetchone()
    if row is None:
        return None
    generation, paused, held, quotes = row[len(_JOB_FIELDS) :]
    return JobRun(
        job=_job_from_row(row),
        purge_generation=int(generation),
        learning_paused=bool(paused),
        held=[tuple(fact) for fact in json.loads(held or "[]")],
        agent_quotes=[tuple(quote) for quote in json.loads(quotes or "[]")],
    )


def job_succeed(
    job: ExtractionJob, *, purge_generation: int, model: str = "", **counts: int
) -> ExtractionJob:
    """Inside the caller's transaction, the one that writes the job's facts (after fact_upsert
    locked the subject row, so a clear committed before is seen and a later one waits): end
    the unfinished job as succeeded, transcript wiped, if the subject's purge generation is
    still `purge_generation`. One statement, which also locks the job row. When it cannot (the
    generation moved: a clear during extraction wins; or another delivery finished the job
    first) it refuses, and the caller's write must roll back: `job_not_ended(exc)` recognizes
    the refusal.

    Nothing is fetched: the statement can wait in the pipeline and travel with
    the writes and the COMMIT (fact_upsert's `before_commit`), and the refusal is an error that
    cancels that COMMIT. Returns the job as the statement leaves it once committed."""
    unknown = set(counts) - set(SUCCESS_COUNTS)
    if unknown:
        raise ValueError(f"unknown job fields: {sorted(unknown)}")
    params: dict[str, Any] = dict.fromkeys(SUCCESS_COUNTS, 0)
    params.update(counts)
    params.update(job=job.pk, generation=purge_generation, model=model[:100], now=timezone.now())
    with hot_cursor() as cursor:
        cursor.execute(SQL_SUCCEED, params)
    ended = copy.copy(job)
    ended.status, ended.reason, ended.retryable = JobStatus.SUCCEEDED, "", False
    ended.model, ended.finished_at, ended.transcript = params["model"], params["now"], None
    for name in SUCCESS_COUNTS:
        setattr(ended, name, params[name])
    return ended


@transaction.atomic
def job_finish(
    job_id: int, *, status: JobStatus, reason: str = "", retryable: bool = False, **counts: Any
) -> ExtractionJob | None:
    """End the job: final status, counts, and the transcript wiped whatever the outcome.
    `retryable` marks a failure that was not the turn's fault: posting it again runs it again."""
    if status not in FINISHED_STATUSES:
        raise ValueError(f"{status} is not a final status")
    unknown = set(counts) - _COUNTERS
    if unknown:
        raise ValueError(f"unknown job fields: {sorted(unknown)}")
    job = ExtractionJob.objects.select_for_update().filter(pk=job_id).first()
    if job is None or job.status in FINISHED_STATUSES:
        return job
    job.status = status
    job.reason = clean_reason(reason)
    job.retryable = retryable and status == JobStatus.FAILED
    for name, value in counts.items():
        setattr(job, name, value)
    job.finished_at = timezone.now()
    job.transcript = None
    job.save()
    return job


# A traveller who forgets everything takes the transcripts of their unfinished jobs with them:
# a part of the erasing statement (registered with on_facts=False: erasing single facts leaves
# transcripts alone, so it costs nothing then).
EXTRACTION_ERASE_SQL = SQL_ERASE_TRANSCRIPTS


STALE_JOB_REASON = "abandoned: no worker finished it in time (the queue lost it)"


def jobs_fail_stale(*, older_than: timedelta, batch_size: int = 1000) -> int:
    """Fail jobs still queued or running long after they were posted (a lost broker message, a
    killed worker) and wipe their transcripts, so no conversation text waits forever. Batched,
    one transaction per batch, safe to re-run. Returns how many jobs it ended."""
    cutoff = timezone.now() - older_than
    total = 0
    while True:
        with transaction.atomic():
            ids = list(
                ExtractionJob.objects.select_for_update(skip_locked=True)
                .filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING], queued_at__lte=cutoff)
                .values_list("pk", flat=True)[:batch_size]
            )
            if not ids:
                return total
            total += ExtractionJob.objects.filter(pk__in=ids).update(
                status=JobStatus.FAILED,
                retryable=True,
                reason=STALE_JOB_REASON,
                finished_at=timezone.now(),
                transcript=None,
            )


LOST_WORKER_REASON = "its worker stopped before finishing; sent again"
GAVE_UP_REASON = "abandoned: its worker stopped {sends} times without finishing"


def jobs_reap(*, batch_size: int = 1000) -> dict[str, int]:
    """Periodic (Celery beat): make sure no turn is lost between the web process, the broker and
    a worker. Sends again

    - queued jobs never handed to the broker (it was down when the turn was posted),
    - queued jobs handed over longer ago than the broker keeps an unacknowledged message (the
      broker lost it), and
    - running jobs past their deadline (the worker died, even its main process), while sends
      remain; past EXTRACTION_MAX_SENDS the job fails, retryable, and its transcript goes.

    The job's facts are written once whatever happens: a second delivery of a finished job does
    nothing (`job_begin`, and `_store` under the job's row lock). Returns counts by outcome."""
    now = timezone.now()
    unsent_before = now - timedelta(seconds=settings.EXTRACTION_RESEND_AFTER_SECONDS)
    lost_before = now - timedelta(seconds=settings.BROKER_VISIBILITY_TIMEOUT_SECONDS)
    deadline = now - timedelta(seconds=settings.EXTRACTION_JOB_DEADLINE_SECONDS)
    max_sends = settings.EXTRACTION_MAX_SENDS
    queued = Q(status=JobStatus.QUEUED) & (
        Q(sent_at__isnull=True, queued_at__lte=unsent_before) | Q(sent_at__lte=lost_before)
    )
    stalled = Q(status=JobStatus.RUNNING, started_at__lte=deadline)
    with transaction.atomic():
        jobs = list(
            ExtractionJob.objects.select_for_update(skip_locked=True)
            .filter(queued | stalled)
            .order_by("queued_at")
            .only("pk", "sends")[:batch_size]
        )
        resend = [job.pk for job in jobs if job.sends < max_sends]
        exhausted = [job for job in jobs if job.sends >= max_sends]
        ExtractionJob.objects.filter(pk__in=resend, status=JobStatus.RUNNING).update(
            status=JobStatus.QUEUED, reason=LOST_WORKER_REASON
        )
        for job in exhausted:
            job_finish(
                job.pk,
                status=JobStatus.FAILED,
                retryable=True,
                reason=GAVE_UP_REASON.format(sends=job.sends),
            )
    sent = 0
    for pk in resend:  # after the commit, so a worker never sees the job still "running"
        if not job_enqueue(pk):
            break  # the broker is still down: the next run tries again
        sent += 1
    outcome = {"sent": sent, "unsent": len(resend) - sent, "failed": len(exhausted)}
    if any(outcome.values()):
        logger.info("extraction reaper: %s", outcome)
    return outcome
