"""The system of record: travellers (subjects), their facts, and the append-only history.

Models hold data only. Every write goes through `facts.services`, every read the UI or API
needs through `facts.selectors`.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models.functions import Now

from memoryadmin_client.types import KEY_MAX_LENGTH, SESSION_ID_MAX_LENGTH, VALUE_MAX_LENGTH

from . import tables
from .choices import (
    ActorKind,
    Category,
    EventAction,
    FactStatus,
    Origin,
    PolicyAction,
    RunStatus,
)
from .keyhash import DIGEST_LENGTH, DIGEST_PREFIX, event_key_hash
from .validation import (
    EVIDENCE_MAX_LENGTH,
    RESTRICTION_NOTE_MAX_LENGTH,
    SUBJECT_ID_MAX_LENGTH,
    validate_blocked_patterns,
)


class Subject(models.Model):
    """A traveller, known only by the airline's opaque id."""

    subject_id = models.CharField(max_length=SUBJECT_ID_MAX_LENGTH, unique=True)
    purge_generation = models.PositiveIntegerField(
        default=0, help_text="Bumped by every clear; extraction discards a batch if it moved."
    )
    memory_paused = models.BooleanField(
        default=False, help_text="The traveller turned learning off: nothing new is extracted."
    )
    memory_use_paused = models.BooleanField(
        default=False, help_text="The traveller asked the agent not to use its memory of them."
    )
    legal_hold = models.BooleanField(default=False, help_text="Retention sweeps skip this subject.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = tables.SUBJECT
        indexes = [
            # Retention (the drop by month, the sweeps) starts from the few held travellers.
            models.Index(
                fields=["subject_id"],
                name="memory_subject_held",
                condition=models.Q(legal_hold=True),
            ),
            # The agent's every read asks whether the traveller paused the use of memory: an
            # index-only lookup among the few who did, not a fetch of the traveller's row.
            models.Index(
                fields=["subject_id"],
                name="memory_subject_use_paused",
                condition=models.Q(memory_use_paused=True),
            ),
        ]

    def __str__(self) -> str:
        return self.subject_id


class MemoryFact(models.Model):
    """One durable fact; mirrors the upstream `memory_fact` row plus what governance needs."""

    subject = models.ForeignKey(
        Subject,
        to_field="subject_id",
        db_column="subject_id",
        on_delete=models.CASCADE,
        related_name="facts",
        db_index=False,  # memory_fact_subject_key_uniq starts with subject_id and serves it
    )
    key = models.CharField(max_length=KEY_MAX_LENGTH)
    value = models.CharField(max_length=VALUE_MAX_LENGTH)
    category = models.CharField(max_length=16, choices=Category.choices)
    # Retention counts from `updated_at` (the value's last change): flagging or expiring a fact
    # must not extend how long it is kept. `changed_at` moves on any change by anyone (value,
    # category, status, sensitivity, expiry: every new version) and is what the desk shows as
    # "Updated". A database default: the import's COPY and the bench generator do not name it.
    updated_at = models.DateTimeField(help_text="When the value last changed.")
    changed_at = models.DateTimeField(
        db_default=Now(), help_text="When anything about the fact last changed (its version)."
    )
    source_session_id = models.CharField(
        max_length=SESSION_ID_MAX_LENGTH,
        blank=True,
        default="",
        help_text="12-hex tag of the session, never the raw session id.",
    )
    created_at = models.DateTimeField()
    origin = models.CharField(max_length=16, choices=Origin.choices)
    status = models.CharField(max_length=16, choices=FactStatus.choices, default=FactStatus.ACTIVE)
    sensitive = models.BooleanField(default=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    expiry_pinned = models.BooleanField(
        default=False, help_text="expires_at was set by a person; retention rules leave it alone."
    )
    version = models.PositiveIntegerField(default=1)
    # Why the current version is known: the traveller's own words it was learned from
    # (checked against the turn, at most 200 characters, through the write filter), "" when
    # none; and who wrote this version (an Origin), which the pages say instead of a quote for
    # facts entered by staff, corrected by the traveller or imported. Database defaults: the
    # import's COPY and the bench generator do not name them.
    evidence = models.CharField(
        max_length=EVIDENCE_MAX_LENGTH, blank=True, default="", db_default=""
    )
    evidence_origin = models.CharField(
        max_length=16, choices=Origin.choices, blank=True, default="", db_default=""
    )
    # Who rewrote the current value, when a person did: "staff" with the staff
    # member's display name, or "customer" (never the traveller's id); "" when the agent,
    # extraction or an import wrote it, which is what `origin` then says. Set by `fact_edit` and
    # a person's upsert, cleared by any other writer of a new value.
    rewritten_by = models.CharField(
        max_length=16,
        choices=[(ActorKind.STAFF.value, "Staff"), (ActorKind.CUSTOMER.value, "Traveller")],
        blank=True,
        default="",
        db_default="",
    )
    rewritten_by_label = models.CharField(max_length=150, blank=True, default="", db_default="")
    # Restricted (GDPR Art. 18(1)(a)): kept, unchanged, but not used while its accuracy is
    # checked. Every agent read leaves it out (`sql.py`), the upsert and the import leave its
    # value alone (`services/plan.py`). Who asked ("customer" or "staff") and the traveller's
    # own words about what is wrong: untrusted text, escaped where shown, never logged.
    # Set and cleared only by `services/restriction.py` (and `fact_edit`, which lifts it).
    restricted_at = models.DateTimeField(null=True, blank=True)
    restricted_by = models.CharField(
        max_length=16,
        choices=[(ActorKind.STAFF.value, "Staff"), (ActorKind.CUSTOMER.value, "Traveller")],
        blank=True,
        default="",
        db_default="",
    )
    restriction_note = models.CharField(
        max_length=RESTRICTION_NOTE_MAX_LENGTH, blank=True, default="", db_default=""
    )

    class Meta:
        db_table = tables.MEMORY_FACT
        constraints = [
            models.UniqueConstraint(fields=["subject", "key"], name="memory_fact_subject_key_uniq"),
        ]
        # Every index is rewritten by every update of a fact: only what a hot path or a sweep
        # uses (tests/facts/test_indexes.py lists each with its purpose).
        indexes = [
            models.Index(
                fields=["expires_at"],
                name="memory_fact_expires_at",
                condition=models.Q(expires_at__isnull=False),
            ),
            models.Index(
                fields=["created_at"],
                name="memory_fact_pending_review",
                condition=models.Q(status="pending_review"),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.subject_id}:{self.key}"

    @property
    def restricted(self) -> bool:
        return self.restricted_at is not None


class FactEventManager(models.Manager["FactEvent"]):
    def bulk_create(self, objs: Any, *args: Any, **kwargs: Any) -> list[FactEvent]:
        """Fill `key_hash` as `FactEvent.save` does (bulk_create bypasses save)."""
        objs = list(objs)
        for event in objs:
            event.fill_key_hash()
        return super().bulk_create(objs, *args, **kwargs)


class FactEvent(models.Model):
    """Append-only history: who did what to which fact, when and why. Values are erasable.

    `key_hash` is the keyed hash of (subject_id, key), written with the event (`keyhash`): the
    history of a fact is found through it, and erasing the fact copies it over `key` and blanks
    the snapshots, so the update touches no indexed column. With the free room the table keeps
    on its pages (fillfactor, migration 0007) that makes it a HOT update: no index is written.
    For the same reason the number of a "forget everything" receipt is copied out of `after`
    into `receipt` for its lookup index: an index on an expression of `after` would make every
    redaction rewrite every index."""

    subject_id = models.CharField(max_length=SUBJECT_ID_MAX_LENGTH)
    key = models.CharField(max_length=KEY_MAX_LENGTH, blank=True, default="")
    key_hash = models.CharField(max_length=DIGEST_LENGTH, blank=True, default="", editable=False)
    action = models.CharField(max_length=32, choices=EventAction.choices)
    actor_kind = models.CharField(max_length=16, choices=ActorKind.choices)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,  # partial index below: most events have no staff user
    )
    actor_label = models.CharField(max_length=200, blank=True, default="")
    reason = models.CharField(max_length=500, blank=True, default="")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    session_tag = models.CharField(max_length=SESSION_ID_MAX_LENGTH, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    redacted_at = models.DateTimeField(null=True, blank=True)
    # The subject_cleared event's receipt number (also in `after`, the event's record), "" else.
    # A database default: the services' own INSERTs do not name it.
    receipt = models.CharField(max_length=20, blank=True, default="", db_default="", editable=False)

    objects = FactEventManager()

    class Meta:
        db_table = tables.FACT_EVENT
        indexes = [
            models.Index(
                fields=["subject_id", "key_hash", "created_at"], name="fact_event_subject_hash"
            ),
            models.Index(fields=["subject_id", "created_at"], name="fact_event_subject_time"),
            # For the FK's SET NULL when a staff user is deleted. Partial: the agent's,
            # extraction's and the sweep's events (nearly all) are not written to it.
            models.Index(
                fields=["actor_user"],
                name="fact_event_actor_user",
                condition=models.Q(actor_user__isnull=False),
            ),
            # Finding a receipt by its number; partial: only subject_cleared events have one.
            models.Index(
                fields=["receipt"], name="fact_event_receipt", condition=~models.Q(receipt="")
            ),
        ]
        constraints = [
            # An event about a fact without its hash could not be found, so not erased.
            models.CheckConstraint(
                condition=models.Q(key="") | models.Q(key_hash__startswith=DIGEST_PREFIX),
                name="fact_event_key_hashed",
            ),
        ]
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.subject_id}:{self.key} {self.action} by {self.actor_kind}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.fill_key_hash()
        super().save(*args, **kwargs)

    def fill_key_hash(self) -> None:
        if self.key and not self.key_hash:
            self.key_hash = event_key_hash(self.subject_id, self.key)


class MemorySettings(models.Model):
    """Singleton (pk=1) edited by privacy admins; read through `selectors.memory_settings`."""

    tier_one_cap = models.PositiveIntegerField(default=8)
    max_new_facts = models.PositiveIntegerField(default=3)
    memory_enabled = models.BooleanField(default=True)
    blocked_patterns = models.JSONField(
        default=list, blank=True, help_text="Extra regular expressions the write filter rejects."
    )
    memory_model = models.CharField(max_length=100, default="claude-haiku-4-5-20251001")
    audit_retention_days = models.PositiveIntegerField(default=365)
    # How long use receipts (usage app) are kept; empty: MEMORY_USE_RETENTION_DAYS (90).
    use_retention_days = models.PositiveIntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = tables.SETTINGS
        verbose_name_plural = "memory settings"

    def __str__(self) -> str:
        return "Memory settings"

    def clean(self) -> None:
        """Refuse a blocked pattern that does not compile (or would block everything): saved, it
        would make the write filter refuse every write until someone fixes it."""
        try:
            validate_blocked_patterns(self.blocked_patterns)
        except ValidationError as exc:
            raise ValidationError({"blocked_patterns": exc.messages}) from None


class RetentionRule(models.Model):
    """A TTL for facts matching category / key glob / sensitivity; the most specific rule wins."""

    name = models.CharField(max_length=100)
    category = models.CharField(max_length=16, choices=Category.choices, blank=True, default="")
    key_glob = models.CharField(max_length=KEY_MAX_LENGTH, blank=True, default="")
    sensitive = models.BooleanField(
        null=True, blank=True, help_text="Match only sensitive (yes) or non-sensitive (no) facts."
    )
    ttl_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="Days after the last change; empty: keep until deleted."
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = tables.RETENTION_RULE
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.ttl_label})"

    @property
    def ttl_label(self) -> str:
        if self.ttl_days is None:
            return "keep until deleted"
        return f"{self.ttl_days} day{'' if self.ttl_days == 1 else 's'}"

    def snapshot(self) -> dict[str, object]:
        """The rule as the policy history records it."""
        return {
            "name": self.name,
            "category": self.category or None,
            "key_glob": self.key_glob or None,
            "sensitive": self.sensitive,
            "ttl_days": self.ttl_days,
            "enabled": self.enabled,
        }


class PolicyEvent(models.Model):
    """Append-only history of policy decisions (settings, retention rules, service tokens):
    who changed what, when, why, with before and after. Policy is not about one traveller, so
    it is kept apart from FactEvent; it never holds a fact value."""

    action = models.CharField(max_length=32, choices=PolicyAction.choices)
    target = models.CharField(max_length=200, blank=True, default="")
    actor_kind = models.CharField(max_length=16, choices=ActorKind.choices)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    actor_label = models.CharField(max_length=200, blank=True, default="")
    reason = models.CharField(max_length=500, blank=True, default="")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        db_table = tables.POLICY_EVENT
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.target} by {self.actor_label}"


class RetentionRun(models.Model):
    """One recomputation of expiry dates after a rule change, walked in primary-key chunks by a
    Celery task; `done`/`total` is the progress the settings page shows."""

    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    last_pk = models.BigIntegerField(default=0)
    policy_event = models.ForeignKey(
        PolicyEvent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = tables.RETENTION_RUN
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"retention run {self.pk}: {self.done}/{self.total} {self.status}"

    @property
    def is_finished(self) -> bool:
        return self.status in (RunStatus.DONE, RunStatus.SUPERSEDED)
