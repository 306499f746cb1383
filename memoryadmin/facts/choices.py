"""The fixed vocabularies of the record (Django choices), apart from the models so that the
validation the models call can use them too without importing the models."""

from __future__ import annotations

from django.db import models

__all__ = [
    "ActorKind",
    "Category",
    "EventAction",
    "FactStatus",
    "Origin",
    "PolicyAction",
    "RunStatus",
]


class Category(models.TextChoices):
    PREFERENCE = "preference", "Preference"
    CONSTRAINT = "constraint", "Constraint"
    CONTEXT = "context", "Context"


class Origin(models.TextChoices):
    EXTRACTION = "extraction", "Learned from a conversation"
    AGENT = "agent", "Saved by the agent"
    STAFF = "staff", "Entered by support staff"
    CUSTOMER = "customer", "Entered by the traveller"
    IMPORT = "import", "Imported"


class FactStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    PENDING_REVIEW = "pending_review", "Waiting for review"


class ActorKind(models.TextChoices):
    AGENT = "agent", "Agent"
    EXTRACTION = "extraction", "Extraction"
    STAFF = "staff", "Staff"
    CUSTOMER = "customer", "Traveller"
    RETENTION = "retention", "Retention"
    SYSTEM = "system", "System"


class EventAction(models.TextChoices):
    CREATED = "created", "Created"
    UPDATED = "updated", "Updated"
    EXPIRED = "expired", "Expired"
    EXPIRY_CHANGED = "expiry_changed", "Expiry changed"
    FLAGGED_SENSITIVE = "flagged_sensitive", "Flagged sensitive"
    UNFLAGGED_SENSITIVE = "unflagged_sensitive", "Sensitive flag removed"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    DELETED = "deleted", "Deleted"
    SUBJECT_CLEARED = "subject_cleared", "All facts cleared"
    # One per fact that a clear ("forget everything") erased, beside its subject_cleared event:
    # what support may still say about that fact (category, learned, changes), as a deletion does.
    FORGOTTEN = "forgotten", "Erased with everything else"
    PREFERENCES_CHANGED = "preferences_changed", "Memory preferences changed"
    LEGAL_HOLD_PLACED = "legal_hold_placed", "Legal hold placed"
    LEGAL_HOLD_LIFTED = "legal_hold_lifted", "Legal hold lifted"
    VALUE_REVEALED = "value_revealed", "Sensitive value revealed"
    # A reviewer's mark on a fact drawn for the weekly quality sample (correct, or
    # wrong with one reason, in words in the event's reason). No value, changes no version.
    QUALITY_MARKED = "quality_marked", "Quality checked"
    # A privacy admin blanked one past version's value and quote in every snapshot that held
    # it; the version, its time and actor stay, with a keyed hash of the value (in `after`).
    VERSION_REDACTED = "version_redacted", "Version redacted"
    # Use stopped while the fact's accuracy is checked (GDPR Art. 18), and resumed: the value
    # is unchanged by either; the reason says who asked and why, `after` the outcome.
    RESTRICTED = "restricted", "Use stopped while checked"
    UNRESTRICTED = "unrestricted", "Use resumed"


class PolicyAction(models.TextChoices):
    SETTINGS_CHANGED = "settings_changed", "Memory settings changed"
    RULE_CREATED = "rule_created", "Retention rule added"
    RULE_UPDATED = "rule_updated", "Retention rule changed"
    RULE_DELETED = "rule_deleted", "Retention rule deleted"
    TOKEN_ISSUED = "token_issued", "Service token created"
    TOKEN_REVOKED = "token_revoked", "Service token revoked"
    PRIVACY_REQUEST = "privacy_request", "Privacy request step"
    WEBHOOK_RECIPIENT = "webhook_recipient", "Webhook recipient changed"
    WEBHOOK_REPLAYED = "webhook_replayed", "Webhook delivery replayed"
    USE_RETENTION_CHANGED = "use_retention_changed", "Use receipts retention changed"


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    SUPERSEDED = "superseded", "Replaced by a newer change"
