"""One row per posted turn: the queue item, its outcome and its cost. Not a fact, so no FactEvent.

The transcript is the only copy of what the traveller said; it lives here only while the job is
unfinished and is wiped the moment the job ends (or the traveller asks to forget everything).
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from memoryadmin.facts.models import SUBJECT_ID_MAX_LENGTH
from memoryadmin.facts.validation import REASON_MAX_LENGTH

from . import tables

SESSION_TAG_LENGTH = 12
TURN_ID_MAX_LENGTH = 128


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    SKIPPED = "skipped", "Skipped"
    FAILED = "failed", "Failed"


FINISHED_STATUSES = frozenset({JobStatus.SUCCEEDED, JobStatus.SKIPPED, JobStatus.FAILED})


class ExtractionJob(models.Model):
    """Extraction of one agent turn. (subject, session tag, turn id) is the idempotency key.

    The API names a job by `public_id`, a random UUID: the sequential primary key would let a
    token count other hosts' turns or guess their job addresses."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    subject_id = models.CharField(max_length=SUBJECT_ID_MAX_LENGTH)
    session_tag = models.CharField(
        max_length=SESSION_TAG_LENGTH, help_text="12-hex tag of the session, never the raw id."
    )
    turn_id = models.CharField(max_length=TURN_ID_MAX_LENGTH)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    reason = models.CharField(
        max_length=REASON_MAX_LENGTH,
        blank=True,
        default="",
        help_text="Why the job was skipped, failed or retried. Never contains a fact value.",
    )
    proposed = models.PositiveIntegerField(default=0, help_text="record_fact calls the model made.")
    stored = models.PositiveIntegerField(default=0, help_text="New facts written.")
    updated = models.PositiveIntegerField(default=0, help_text="Held facts given a new value.")
    duplicates = models.PositiveIntegerField(default=0, help_text="Proposals already known.")
    blocked = models.PositiveIntegerField(default=0, help_text="Refused by the write filter.")
    sent_to_review = models.PositiveIntegerField(
        default=0, help_text="Written as possibly sensitive, waiting for review."
    )
    invalid = models.PositiveIntegerField(default=0, help_text="Malformed record_fact calls.")
    cut_by_cap = models.PositiveIntegerField(default=0, help_text="Dropped by max_new_facts.")
    model = models.CharField(max_length=100, blank=True, default="")
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    attempts = models.PositiveIntegerField(default=0, help_text="Model calls tried.")
    queued_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the job was last handed to the broker; empty while it never was.",
    )
    sends = models.PositiveIntegerField(
        default=0, help_text="How many times the job was handed to the broker."
    )
    retryable = models.BooleanField(
        default=False,
        help_text="Failed for a reason outside the turn (lost, gave up on retries): posting the "
        "same turn again runs it again.",
    )
    created_by_label = models.CharField(max_length=200, blank=True, default="")
    transcript = models.JSONField(
        null=True, blank=True, help_text="The turn's messages; wiped when the job finishes."
    )
    # The turn's use receipts as posted (`used` of POST .../turns: {"injected": [keys],
    # "recalled": [keys]}), riding with the job so that the request writes nothing more; the
    # usage app takes them off (and empties this) when the job starts, or from its beat
    # sweep for jobs that have no task (born skipped).
    used = models.JSONField(
        null=True, blank=True, help_text="Use receipts waiting to be recorded (usage app)."
    )
    # The version of the extraction prompt (`prompts.PROMPT_VERSION`, a short hash of
    # its text) the model was called with, named with the model: a prompt change shows up on
    # the "Memory quality" page as its own line. Last, so JOB_COLUMNS keeps the model's order.
    prompt_version = models.CharField(
        max_length=16, blank=True, default="", db_default="", help_text="Extraction prompt hash."
    )

    class Meta:
        db_table = tables.EXTRACTION_JOB
        constraints = [
            models.UniqueConstraint(
                fields=["subject_id", "session_tag", "turn_id"], name="extraction_job_turn_uniq"
            ),
        ]
        indexes = [
            models.Index(fields=["status", "queued_at"], name="extraction_job_status"),
            # The few jobs whose receipts wait (usage's sweep), found without a scan.
            models.Index(
                fields=["id"],
                condition=models.Q(used__isnull=False),
                name="extraction_job_used_waiting",
            ),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} {self.subject_id} {self.status}"

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_STATUSES
