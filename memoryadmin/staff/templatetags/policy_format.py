"""Show policy history values the way a privacy admin reads them, not as Python reprs."""

from __future__ import annotations

from django import template

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
}


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
    return str(value)


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
