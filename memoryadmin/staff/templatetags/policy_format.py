"""Show policy history values the way a privacy admin reads them, not as Python reprs."""

from __future__ import annotations

import re
from datetime import date

from django import template
from django.utils.dateparse import parse_datetime

from .staff_time import day, exact_time

register = template.Library()
NAMES = {
    "memory_enabled": "memory on",
    "tier_one_cap": "tier one cap",
    "max_new_facts": "new facts per turn",
    "memory_model": "model",
    "blocked_patterns": "blocked patterns",
    "audit_retention_days": "audit history (days)",
    "use_retention_days": "use receipts (days)",
    "key_glob": "key pattern",
    "ttl_days": "keep for (days)",
    # Privacy requests' steps and evidence, and webhook recipients.
    "step": "step",
    "receipt": "receipt number",
    "facts_erased": "facts erased",
    "rows_remaining": "rows still holding erased facts",
    "verified_at": "checked",
    "nothing_held": "nothing held",
    "recipients": "webhook recipients (where each stands now)",
    "recipient": "webhook recipient",
    "sha256": "file's SHA-256",
    "due_on": "due",
    "told_on": "traveller told",
    "key_hash": "fact (keyed hash)",
    "correction_event": "correction",
    "erased_at": "erased",
    "traveller_name_en": "name travellers read (English)",
    "traveller_name_zh_hant": "name travellers read (Chinese)",
    "url": "address",
    "events": "events",
    "delivery": "delivery number",
    "memory_paused": "memory use paused",
    "memory_use_paused": "memory use paused",
    "legal_hold": "legal hold",
    "throttle_rate": "rate limit",
    "prefix": "token starts with",
    "revoked": "revoked",
    "added": "added",
    "active": "active",
}


_ISO_DAY = re.compile(r"\d{4}-\d\d-\d\d")
_ISO_MOMENT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")


@register.filter
def policy_value(value: object) -> str:
    if value is None:
        return "—"
    if value is True:
        return "yes"
    if value is False:
        return "no"
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value) if value else "none"
    if isinstance(value, dict):
        return "; ".join(f"{policy_name(k)}: {policy_value(v)}" for k, v in value.items()) or "none"
    if isinstance(value, str):
        return _moment(value) or value
    return str(value)


def _moment(value: str) -> str:
    """An ISO date or time in the staff pages' one format ("1 Dec 2026"), or "" if it is not
    one (a malformed one stays as it was written)."""
    try:
        if _ISO_DAY.fullmatch(value):
            return day(date.fromisoformat(value))
        moment = parse_datetime(value) if _ISO_MOMENT.match(value) else None
    except ValueError:
        return ""
    return exact_time(moment) if moment else ""


def _enum_words() -> dict[str, dict[str, str]]:
    from memoryadmin.privacy.models import Channel, RequestKind, RequestStatus

    from .privacy_words import STEP_WORDS

    return {
        "kind": {str(v): str(label) for v, label in RequestKind.choices},
        "status": {str(v): str(label) for v, label in RequestStatus.choices},
        "channel": {str(v): str(label) for v, label in Channel.choices},
        "step": {k: v for k, v in STEP_WORDS.items()},
    }


@register.filter
def policy_value_of(value: object, name: str) -> str:
    """`policy_value`, with the internal names of a privacy request's step, kind, status and
    channel in words ("erasure" → "Erasure", "on_hold" → "On hold (legal hold)")."""
    if isinstance(value, str):
        words = _enum_words().get(name, {})
        if value in words:
            return words[value]
    if name == "recipients" and isinstance(value, dict):
        return "; ".join(_outcome(recipient, o) for recipient, o in sorted(value.items())) or "none"
    return policy_value(value)


def _outcome(recipient: str, outcome: object) -> str:
    """One recipient's acknowledgement in the words of the request's page."""
    from .privacy_words import delivery_words

    if not isinstance(outcome, dict):
        return f"{recipient}: {policy_value(outcome)}"
    if outcome.get("acknowledged"):
        at = _moment(str(outcome.get("at") or ""))
        return f"{recipient}: acknowledged" + (f" on {at}" if at else "")
    return f"{recipient}: not yet ({delivery_words(str(outcome.get('status', '')))})"


@register.filter
def policy_name(name: str) -> str:
    return NAMES.get(name, name.replace("_", " "))


@register.filter
def policy_changed(event: object) -> set[str]:
    """The names whose value differs between before and after: what the change was about, so
    the history can mark it among the unchanged fields it also lists."""
    before = getattr(event, "before", None) or {}
    after = getattr(event, "after", None) or {}
    if not before or not after:
        return set()
    return {name for name in set(before) | set(after) if before.get(name) != after.get(name)}
