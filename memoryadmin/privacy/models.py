"""Privacy requests, their timeline, webhook recipients, the outbox and the delivery log.

None of these tables ever holds a fact value or key: requests keep evidence (hashes, receipt
numbers, counts), the outbox keeps the keyed hash of a key, the delivery log keeps status codes.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models

from . import clock


class RequestKind(models.TextChoices):
    ACCESS = "access", "Access / export"
    RECTIFICATION = "rectification", "Rectification"
    ERASURE = "erasure", "Erasure"
    RESTRICTION = "restriction", "Restriction (pause)"
    OBJECTION = "objection", "Objection"


class Channel(models.TextChoices):
    PORTAL = "portal", "Portal"
    PHONE = "phone", "Phone"
    EMAIL = "email", "E-mail"
    LETTER = "letter", "Letter"


class RequestStatus(models.TextChoices):
    OPEN = "open", "Open"
    IN_PROGRESS = "in_progress", "In progress"
    COMPLETED = "completed", "Completed"
    REFUSED = "refused", "Refused"
    ON_HOLD = "on_hold", "On hold"


# Statuses whose clock is running (on hold waits for the hold to lift, by law, not by us).
WORKING = (RequestStatus.OPEN, RequestStatus.IN_PROGRESS)
# Not closed: a new request of the same kind for the same traveller is a duplicate of one of these.
NOT_CLOSED = (*WORKING, RequestStatus.ON_HOLD)


class IdentityCheck(models.TextChoices):
    """How the traveller's identity was verified. "" is a request recorded before the question
    was asked (migration 0006): not blocked, shown as "not recorded"."""

    PORTAL_LINK = "portal_link", "Portal link (the traveller signed in through it)"
    AIRLINE_ACCOUNT = "airline_account", "Signed in to their airline account"
    CHECKED = "checked", "Checked by phone or in person"
    UNVERIFIED = "unverified", "Not yet verified"


class AgentRelation(models.TextChoices):
    """Who made a request for the traveller."""

    TRAVEL_AGENT = "travel_agent", "Travel agent"
    FAMILY = "family", "Family member"
    LEGAL = "legal_representative", "Legal representative"
    OTHER = "other", "Other"


class PrivacyRequest(models.Model):
    """One request of a traveller under the GDPR, however it arrived."""

    number = models.CharField(max_length=20, unique=True)
    subject_id = models.CharField(max_length=128, db_index=True)
    kind = models.CharField(max_length=16, choices=RequestKind.choices)
    channel = models.CharField(max_length=8, choices=Channel.choices)
    status = models.CharField(
        max_length=12, choices=RequestStatus.choices, default=RequestStatus.OPEN
    )
    # The day the request was received, in the airline's one zone: always known. The moment
    # only when it is: a portal request's; a call, e-mail or letter is entered as a day, and no
    # hour is made up for it.
    received_on = models.DateField()
    received_at = models.DateTimeField(null=True, blank=True)
    due_on = models.DateField(help_text="In the airline's time zone, after any extension.")
    original_due_on = models.DateField()
    extension_months = models.PositiveSmallIntegerField(default=0)
    extension_reason = models.CharField(max_length=500, blank=True, default="")
    traveller_told_on = models.DateField(null=True, blank=True)
    ground = models.CharField(max_length=500, blank=True, default="")  # refusal or hold
    note = models.CharField(max_length=1000, blank=True, default="")
    evidence = models.JSONField(default=dict, blank=True)
    handled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    closed_at = models.DateTimeField(null=True, blank=True)
    # Who is asking: how the traveller's identity was verified and what was checked; a request
    # "not yet verified" cannot be worked or completed until `privacy_request_identity_verify`.
    identity_check = models.CharField(
        max_length=16, choices=IdentityCheck.choices, blank=True, default=""
    )
    identity_checked = models.CharField(max_length=500, blank=True, default="")
    # On whose behalf: someone acting for the traveller, their relation and the evidence of
    # their authority that staff saw (empty: the traveller asked themselves).
    agent_name = models.CharField(max_length=200, blank=True, default="")
    agent_relation = models.CharField(
        max_length=24, choices=AgentRelation.choices, blank=True, default=""
    )
    agent_authority = models.CharField(max_length=500, blank=True, default="")
    # A second request of the same kind while one is open: linked to it, with no clock of its
    # own (its due day is the original's, and it is never counted overdue) until split.
    duplicate_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="duplicates"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "privacy_request"
        ordering = ["-created_at", "-id"]  # newest recorded first
        indexes = [models.Index(fields=["status", "due_on"], name="privacy_req_status_due")]

    def __str__(self) -> str:
        return self.number

    @property
    def received_from(self) -> datetime:
        """The earliest moment it may have been received: its moment, else the start of its
        day (what "since the request" means for a request entered as a day)."""
        return self.received_at or clock.day_start(self.received_on)

    @property
    def identity_unverified(self) -> bool:
        return self.identity_check == IdentityCheck.UNVERIFIED

    @property
    def clocked(self) -> bool:
        """Whether its own legal clock runs: a working request that is not a duplicate."""
        return self.status in WORKING and self.duplicate_of_id is None


class RequestStep(models.Model):
    """The request's timeline: every step, who took it, and why."""

    request = models.ForeignKey(PrivacyRequest, on_delete=models.CASCADE, related_name="steps")
    action = models.CharField(max_length=32)
    actor_kind = models.CharField(max_length=16)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    actor_label = models.CharField(max_length=200, blank=True, default="")
    note = models.CharField(max_length=1000, blank=True, default="")
    detail = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "privacy_request_step"
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor_label}"


class WebhookEventType(models.TextChoices):
    FACT_ERASED = "memory.fact.erased", "A fact was erased"
    SUBJECT_ERASED = "memory.subject.erased", "A traveller's memory was erased"
    FACT_CORRECTED = "memory.fact.corrected", "A fact was corrected"
    REQUEST_COMPLETED = "privacy_request.completed", "A privacy request was completed"
    # Art. 19: what recipients of erasures must also be told (see outbox.recipient_wants).
    RECTIFIED = "memory.rectified", "A fact was rectified"
    RESTRICTED = "memory.restricted", "A fact's use was stopped while checked"
    UNRESTRICTED = "memory.unrestricted", "A fact's use resumed"


# Recipients told of erasures are told of these too (Art. 19), without registering for them.
ERASURE_EVENTS = (WebhookEventType.FACT_ERASED, WebhookEventType.SUBJECT_ERASED)
ART19_EVENTS = (
    WebhookEventType.RECTIFIED,
    WebhookEventType.RESTRICTED,
    WebhookEventType.UNRESTRICTED,
)


class WebhookRecipient(models.Model):
    """A system the airline passes the memory to (CRM, warehouse, the agent host's caches)."""

    name = models.CharField(max_length=100, unique=True)
    # What a traveller reads on their receipt, in each portal language ("Our frequent flyer
    # programme"): never the internal name. Empty: the portal says "another of our systems".
    traveller_name_en = models.CharField(max_length=100, blank=True, default="")
    traveller_name_zh_hant = models.CharField(max_length=100, blank=True, default="")
    url = models.CharField(max_length=500)
    events = models.JSONField(default=list)
    # The signing secret, encrypted (Fernet): the library needs it in clear to sign.
    secret_encrypted = models.TextField()
    active = models.BooleanField(default=True)
    failing = models.BooleanField(default=False)
    consecutive_failures = models.PositiveIntegerField(default=0)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_failure_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "privacy_webhook_recipient"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class OutboxEvent(models.Model):
    """One event, written in the transaction of the change it reports (the outbox pattern)."""

    msg_id = models.CharField(max_length=64, unique=True)
    event_type = models.CharField(max_length=40, choices=WebhookEventType.choices)
    subject_id = models.CharField(max_length=128, db_index=True)
    key_hash = models.CharField(max_length=80, blank=True, default="")
    receipt = models.CharField(max_length=40, blank=True, default="")
    path = models.CharField(max_length=20, blank=True, default="")
    request_number = models.CharField(max_length=20, blank=True, default="")
    occurred_at = models.DateTimeField()
    dispatched_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        db_table = "privacy_webhook_outbox"
        ordering = ["id"]
        indexes = [
            models.Index(
                fields=["id"],
                name="privacy_outbox_undispatched",
                condition=models.Q(dispatched_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.msg_id}"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Waiting"
    DELIVERED = "delivered", "Acknowledged"
    FAILED = "failed", "Gave up"


class WebhookDelivery(models.Model):
    """One event for one recipient, tried until it is acknowledged (2xx) or 3 days pass."""

    event = models.ForeignKey(OutboxEvent, on_delete=models.CASCADE, related_name="deliveries")
    recipient = models.ForeignKey(
        WebhookRecipient, on_delete=models.CASCADE, related_name="deliveries"
    )
    status = models.CharField(
        max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "privacy_webhook_delivery"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["event", "recipient"], name="privacy_delivery_once"),
        ]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="privacy_dlv_due")]

    def __str__(self) -> str:
        return f"delivery {self.pk} ({self.status})"


class DeliveryAttempt(models.Model):
    """The delivery log: every attempt's status, time and duration (never a body)."""

    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log"
    )
    attempted_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    ok = models.BooleanField()
    error = models.CharField(max_length=100, blank=True, default="")
    replay = models.BooleanField(default=False)

    class Meta:
        db_table = "privacy_webhook_attempt"
        ordering = ["id"]

    def __str__(self) -> str:
        return f"attempt {self.pk}: {self.status_code}"
