"""The weekly quality sample: which learned facts were drawn for review, and each
reviewer's mark. An item keeps no value and no key: the fact is read through `fact` while it
lives; when it is erased the item is anonymised in the erasing statement (`sql.py`): its
traveller, hash and link go, its mark and the figures' dimensions stay for the precision."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from memoryadmin.facts.keyhash import DIGEST_LENGTH
from memoryadmin.facts.models import SUBJECT_ID_MAX_LENGTH, Category, MemoryFact

from . import tables
from .choices import Language, LearnedBy, Mark, WrongReason


class QualitySample(models.Model):
    """One draw: up to QUALITY_SAMPLE_SIZE facts learned in the 7 days before `drawn_at`."""

    drawn_at = models.DateTimeField()
    # The Monday (UTC) of the week drawn: the page's week by week lines.
    week = models.DateField()
    drawn_by = models.CharField(max_length=200, help_text="Who drew it: a staff name or beat.")
    drawn_by_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    candidates = models.PositiveIntegerField(default=0, help_text="Facts it was drawn from.")

    class Meta:
        db_table = tables.QUALITY_SAMPLE
        ordering = ["-drawn_at", "-id"]

    def __str__(self) -> str:
        return f"quality sample {self.pk} of {self.week}"


class QualitySampleItem(models.Model):
    """One sampled fact, the dimensions the page groups by (copied when drawn: they must
    outlive the fact), and its mark."""

    sample = models.ForeignKey(QualitySample, on_delete=models.CASCADE, related_name="items")
    # No database constraint: the erasing statements delete facts in SQL; the fact's erasers
    # (quality.facts, quality.subjects) null this in the same statement.
    fact = models.ForeignKey(
        MemoryFact,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    subject_id = models.CharField(max_length=SUBJECT_ID_MAX_LENGTH, blank=True, default="")
    key_hash = models.CharField(max_length=DIGEST_LENGTH, blank=True, default="")
    category = models.CharField(max_length=16, choices=Category.choices)
    language = models.CharField(max_length=8, choices=Language.choices)
    origin = models.CharField(max_length=16, choices=LearnedBy.choices)
    model = models.CharField(max_length=100, blank=True, default="")
    prompt_version = models.CharField(max_length=16, blank=True, default="")
    learned_at = models.DateTimeField()
    mark = models.CharField(max_length=8, choices=Mark.choices, blank=True, default="")
    reason = models.CharField(max_length=16, choices=WrongReason.choices, blank=True, default="")
    marked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    marked_at = models.DateTimeField(null=True, blank=True)
    erased_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = tables.QUALITY_SAMPLE_ITEM
        ordering = ["id"]
        indexes = [
            # The erasers find a traveller's items (and a fact's, by its hash).
            models.Index(fields=["subject_id", "key_hash"], name="quality_item_subject_hash"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(mark="wrong") | models.Q(reason=""),
                name="quality_item_reason_only_when_wrong",
            ),
            models.CheckConstraint(
                condition=~models.Q(mark="wrong") | ~models.Q(reason=""),
                name="quality_item_wrong_has_reason",
            ),
        ]

    def __str__(self) -> str:
        return f"quality item {self.pk} {self.mark or 'unmarked'}"
