"""Who acted, in the words staff read: the internal label ("traveller:FF-1") stays out of sight."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()

ACTOR_WORDS = {
    "agent": "The AI agent",
    "extraction": "Extraction, from the conversation",
    "customer": "The traveller, in the privacy portal",
    "retention": "Retention policy",
    "system": "The system",
}


@register.filter
def who(row: Any) -> str:
    """Any record with `actor_kind`, `actor_user` and `actor_label` (a fact event, a privacy
    request's step): the words for its kind, else the staff member's name, else the label."""
    words = ACTOR_WORDS.get(getattr(row, "actor_kind", ""))
    if words:
        return words
    user = getattr(row, "actor_user", None)
    if user is not None:
        return user.get_username()
    return row.actor_label


@register.filter
def no_session(tag: str) -> bool:
    """A session tag that names no conversation: empty, or the all-zero tag of a write made
    outside one (an import, staff, the traveller)."""
    return not tag or set(str(tag)) == {"0"}
