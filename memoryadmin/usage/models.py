"""Use receipts: which facts the agent had in which turn. Append-only, and never a value or a
key: a fact is named by its keyed hash (`facts.keyhash`), so a receipt outlives nothing of the
fact once it is erased (its receipts go with it) and cannot be read back into a topic."""

from __future__ import annotations

from django.db import models

from memoryadmin.facts.keyhash import DIGEST_LENGTH
from memoryadmin.facts.models import SUBJECT_ID_MAX_LENGTH
from memoryadmin_client.types import SESSION_ID_MAX_LENGTH

from .tables import MEMORY_USE

TURN_ID_MAX_LENGTH = 64


class UseHow(models.TextChoices):
    INJECTED = "injected", "Given in the prompt"
    RECALLED = "recalled", "Recalled"


class MemoryUse(models.Model):
    """The agent had one fact in one turn: injected into its prompt or recalled by a tool."""

    id = models.BigAutoField(primary_key=True)
    subject_id = models.CharField(max_length=SUBJECT_ID_MAX_LENGTH)
    key_hash = models.CharField(max_length=DIGEST_LENGTH)
    # The fact's row id when it was used (no foreign key: receipts are append-only and go with
    # the fact through the eraser); lets the pages join receipts to facts in SQL.
    fact_id = models.BigIntegerField()
    session_tag = models.CharField(max_length=SESSION_ID_MAX_LENGTH, blank=True, default="")
    turn_id = models.CharField(max_length=TURN_ID_MAX_LENGTH, blank=True, default="")
    how = models.CharField(max_length=8, choices=UseHow.choices)
    used_at = models.DateTimeField()
    # The fact's version the agent had: as the host reported it, or, when it named
    # none (or one the fact never reached), the version current at recording, and then
    # `version_assumed` says so. Empty only for receipts recorded before versions were kept.
    version = models.PositiveIntegerField(null=True, blank=True)
    version_assumed = models.BooleanField(default=False, db_default=False)
    # Set when the fact was erased: the receipt stays as a tombstone (key hash, version, time;
    # it never held a value, key or quote), so the turn still says a fact it used was erased.
    erased_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = MEMORY_USE
        indexes = [
            # A fact's receipts (its page, the erasure by hash), newest first.
            models.Index(fields=["subject_id", "key_hash", "used_at"], name="memory_use_fact"),
            # A fact's receipts by row: counts, last use, facts unused for 90 days.
            models.Index(fields=["fact_id", "used_at"], name="memory_use_fact_id"),
            # One turn's receipts (the staff turn view).
            models.Index(fields=["subject_id", "session_tag", "turn_id"], name="memory_use_turn"),
            # The expiry sweep.
            models.Index(fields=["used_at"], name="memory_use_used_at"),
        ]

    def __str__(self) -> str:
        return f"{self.subject_id} {self.how} {self.turn_id}"
