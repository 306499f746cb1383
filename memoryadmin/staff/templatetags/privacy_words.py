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
