"""One row per staff read of one traveller's memory (and one per staff sign-in).

No foreign keys: the record outlives the staff account and the traveller's own rows ("forget
everything" keeps it, it is the airline's accountability record), and it holds no value, key or
quote, only who, when, which traveller, what and from where."""

from __future__ import annotations

from django.db import models

from memoryadmin.facts.models import SUBJECT_ID_MAX_LENGTH

from .choices import AccessKind, LoginMethod

TABLE = "staff_access"


class AppendOnly(Exception):
    """A row of the access record was about to be changed (PostgreSQL refuses it too)."""


class StaffAccess(models.Model):
    at = models.DateTimeField()
    staff_user_id = models.BigIntegerField(null=True)
    staff_username = models.CharField(max_length=150)
    subject_id = models.CharField(max_length=SUBJECT_ID_MAX_LENGTH, blank=True, default="")
    what = models.CharField(max_length=20, choices=AccessKind.choices)
    login_method = models.CharField(
        max_length=10, choices=LoginMethod.choices, blank=True, default=""
    )
    address = models.GenericIPAddressField(null=True, blank=True)

    class Meta:
        db_table = TABLE
        indexes = [
            models.Index(fields=["subject_id", "at"], name="staff_access_subject_at"),
            models.Index(fields=["staff_username", "at"], name="staff_access_staff_at"),
            models.Index(fields=["at"], name="staff_access_at"),
        ]

    def __str__(self) -> str:
        return f"{self.staff_username} {self.what} {self.at:%Y-%m-%d %H:%M}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None:
            raise AppendOnly("The staff access record is append-only.")
        super().save(*args, **kwargs)
