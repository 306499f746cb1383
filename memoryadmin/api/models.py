"""What the agent-facing API keeps: the service tokens agent hosts authenticate with, and the
stored responses that make retried writes safe (Idempotency-Key).

Models hold data only; tokens are issued and checked in `api.tokens`, idempotency is handled in
`api.idempotency`.
"""

from __future__ import annotations

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone

from memoryadmin.facts.models import SUBJECT_ID_MAX_LENGTH

TOKEN_NAME_MAX_LENGTH = 100
IDEMPOTENCY_KEY_MAX_LENGTH = 255


class Scope(models.TextChoices):
    MEMORY_READ = "memory:read", "Read a traveller's facts"
    MEMORY_WRITE = "memory:write", "Save, delete and clear a traveller's facts"
    TURNS_WRITE = "turns:write", "Post finished turns for extraction"
    PORTAL_ISSUE = "portal:issue", "Issue privacy-portal links for travellers"


class ServiceToken(models.Model):
    """A bearer credential for one agent host. Only the SHA-256 of the secret is stored, so a
    database dump does not hand out working tokens; the secret is shown once when issued."""

    name = models.CharField(max_length=TOKEN_NAME_MAX_LENGTH)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(
        max_length=8,
        editable=False,
        help_text="First characters of the secret, for recognising it.",
    )
    scopes = models.JSONField(default=list)
    throttle_rate = models.CharField(
        max_length=32,
        blank=True,
        default="",
        help_text="Requests allowed, e.g. 1200/min; empty means the API_THROTTLE_RATE setting.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "api_service_token"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def has_scopes(self, *scopes: str) -> bool:
        return all(scope in self.scopes for scope in scopes)


class IdempotencyRecord(models.Model):
    """The first response to a write sent with an Idempotency-Key, replayed for retries.

    Stored bodies can hold fact values, so the reply is erased whenever the subject's facts are
    (the key, fingerprint and status stay, so a retry is still refused), and records are purged
    once expired."""

    token = models.ForeignKey(ServiceToken, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=IDEMPOTENCY_KEY_MAX_LENGTH)
    subject_id = models.CharField(max_length=SUBJECT_ID_MAX_LENGTH)
    method = models.CharField(max_length=10)
    path = models.TextField()
    request_hash = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField()
    response_body = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    response_headers = models.JSONField(default=dict, blank=True)
    reply_erased_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the reply (which may quote facts) was erased; the key stays recognised.",
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        db_table = "api_idempotency_record"
        constraints = [
            models.UniqueConstraint(fields=["token", "key"], name="api_idempotency_token_key_uniq"),
        ]
        indexes = [models.Index(fields=["subject_id"], name="api_idempotency_subject")]

    def __str__(self) -> str:
        return f"{self.method} {self.path} [{self.key}]"
