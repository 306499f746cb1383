"""A privacy request's steps and evidence in the words a privacy officer reads, not the
internal names the timeline stores ("on_hold", "verification_failed")."""

from __future__ import annotations

from django import template

register = template.Library()

STEP_WORDS = {
    "received": "Received",
    "started": "Work started",
    "exported": "Export handed over",
    "erased": "Memory erased",
    "verification_failed": "Check after erasing found rows left",
    "completed": "Completed",
    "refused": "Refused",
    "extended": "Deadline extended",
    "reopened": "Reopened",
    "on_hold": "On hold (legal hold)",
    "hold_lifted": "Legal hold lifted",
    "acknowledged": "Recipient acknowledged",
    "identity_verified": "Identity verified",
    "duplicate_linked": "Linked as a duplicate",
    "duplicate_received": "A duplicate was received",
    "split": "Split off with its own clock",
    "duplicate_split": "A duplicate was split off",
}

DELIVERY_WORDS = {
    "pending": "waiting",
    "delivered": "acknowledged",
    "failed": "gave up after 3 days",
}


@register.filter
def step_words(action: str) -> str:
    return STEP_WORDS.get(action, str(action).replace("_", " ").capitalize())


@register.filter
def delivery_words(status: str) -> str:
    return DELIVERY_WORDS.get(status, str(status).replace("_", " "))


# Who erased or corrected, as an outbox event's path says it (privacy/sql.py, flows.py), and a
# completed request's kind.
PATH_WORDS = {
    "traveller": "the traveller, in the privacy portal",
    "customer": "the traveller, in the privacy portal",
    "staff": "staff",
    "agent": "the AI agent",
    "extraction": "extraction",
    "review": "a reviewer's rejection",
    "retention": "the retention policy",
    "system": "the system",
    "forget_everything": "forget everything",
    "access": "an access request",
    "rectification": "a rectification request",
    "erasure": "an erasure request",
    "restriction": "a restriction request",
    "objection": "an objection",
}

# httpx's exception names, as an attempt records them, in words.
_CONNECT = ("ConnectError", "ConnectTimeout", "ProxyError", "UnsupportedProtocol")
_TIMEOUT = ("ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutException")


@register.filter
def path_words(path: str) -> str:
    return PATH_WORDS.get(path, str(path).replace("_", " ") or "—")


@register.filter
def answer_words(attempt) -> str:
    """ "Answered 204 (acknowledged)", "Answered 500", "Could not connect", "Timed out"."""
    if attempt.status_code:
        acknowledged = " (acknowledged)" if attempt.ok else ""
        return f"Answered {attempt.status_code}{acknowledged}"
    if attempt.error in _CONNECT:
        return "Could not connect"
    if attempt.error in _TIMEOUT:
        return "Timed out waiting for an answer"
    return "Failed before an answer"


@register.filter
def event_words(event_types) -> str:
    """A recipient's events in words ("A fact was erased, A fact was corrected")."""
    from memoryadmin.privacy.models import WebhookEventType

    labels = dict(WebhookEventType.choices)
    return ", ".join(str(labels.get(name, name)) for name in event_types or []) or "none"
