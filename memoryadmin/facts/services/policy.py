"""Policy services: memory settings, the use-receipt retention and retention rules, as privacy
admins change them, each with its PolicyEvent (the policy history the settings pages show).

Each is keyword-only and one transaction, requires a reason, and writes a PolicyEvent with the
acting person and the before/after values. Policy changes are serialized by locking the settings
row, so two admins cannot save rules that tie with each other at the same moment. A rule change
starts a RetentionRun that a Celery task walks in chunks (facts.tasks.recompute_expiry, through
`services.retention_recompute_chunk`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from .. import retention
from ..actors import Actor
from ..models import (
    MemorySettings,
    PolicyAction,
    PolicyEvent,
    RetentionRule,
    RetentionRun,
)
from ..retention import RuleProposal, check_rule
from ..selectors import memory_config_invalidate, use_retention_days
from ..validation import clean_reason, validate_blocked_patterns

SETTINGS_FIELDS = (
    "memory_enabled",
    "tier_one_cap",
    "max_new_facts",
    "memory_model",
    "blocked_patterns",
    "audit_retention_days",
)
LIMITS = {
    "tier_one_cap": (0, 50),
    "max_new_facts": (0, 20),
    "audit_retention_days": (1, 36500),
}
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$")


def policy_changed() -> None:
    """The one place that tells the per-process cache of settings and rules that they changed
    (now, and again when the transaction commits). Other processes notice within
    MEMORY_CONFIG_CACHE_SECONDS; the recompute and the sweeps read rules uncached."""
    memory_config_invalidate()


def _reason(reason: str) -> str:
    clean = clean_reason(reason)
    if not clean:
        raise ValidationError({"reason": "Say why you are making this change."})
    return clean


def policy_record(
    *,
    action: PolicyAction,
    actor: Actor,
    reason: str,
    target: str = "",
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> PolicyEvent:
    """Write one policy event (also used by the API app for service tokens)."""
    policy_changed()
    return PolicyEvent.objects.create(
        action=action,
        target=target[:200],
        actor_kind=actor.kind,
        actor_user=actor.user,
        actor_label=actor.label[:200],
        reason=reason,
        before=before,
        after=after,
    )


def _lock_policy() -> MemorySettings:
    row = MemorySettings.objects.select_for_update().filter(pk=1).first()
    if row is None:
        MemorySettings.objects.bulk_create([MemorySettings(pk=1)], ignore_conflicts=True)
        row = MemorySettings.objects.select_for_update().get(pk=1)
    return row


# --- memory settings ---------------------------------------------------------------------------


def _clean_settings(values: dict[str, Any]) -> dict[str, Any]:
    """Check a full set of settings; raise ValidationError naming each bad field."""
    errors: dict[str, list[str]] = {}
    clean: dict[str, Any] = {"memory_enabled": bool(values.get("memory_enabled"))}
    for name, (low, high) in LIMITS.items():
        value = values.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            errors[name] = [f"Enter a whole number from {low} to {high}."]
        clean[name] = value
    model = values.get("memory_model")
    if not isinstance(model, str) or not MODEL_NAME.match(model):
        errors["memory_model"] = ["Enter a model name such as claude-haiku-4-5-20251001."]
    clean["memory_model"] = model
    patterns = values.get("blocked_patterns") or []
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        errors["blocked_patterns"] = ["Give one regular expression per line."]
    else:
        patterns = [p.strip() for p in patterns if p.strip()]
        try:
            validate_blocked_patterns(patterns)
        except ValidationError as exc:
            errors["blocked_patterns"] = exc.messages
    clean["blocked_patterns"] = patterns
    if errors:
        raise ValidationError(errors)
    return clean


def _settings_snapshot(row: MemorySettings) -> dict[str, Any]:
    return {name: getattr(row, name) for name in SETTINGS_FIELDS}


@transaction.atomic
def memory_settings_update(*, values: dict[str, Any], actor: Actor, reason: str) -> MemorySettings:
    """Replace the memory settings. Only changed fields are recorded; no change, no event."""
    reason = _reason(reason)
    clean = _clean_settings(values)
    row = _lock_policy()
    before = _settings_snapshot(row)
    changed = {name for name in SETTINGS_FIELDS if before[name] != clean[name]}
    if not changed:
        return row
    for name in changed:
        setattr(row, name, clean[name])
    row.save()
    policy_record(
        action=PolicyAction.SETTINGS_CHANGED,
        actor=actor,
        reason=reason,
        target="memory settings",
        before={name: before[name] for name in sorted(changed)},
        after={name: clean[name] for name in sorted(changed)},
    )
    return row


USE_RETENTION_LIMITS = (1, 3650)


@transaction.atomic
def use_retention_update(*, days: int, actor: Actor, reason: str) -> MemorySettings:
    """How long use receipts (which facts the agent had in which turn) are kept: its own policy
    event, since shortening it erases receipts at the next sweep. No change, no event."""
    reason = _reason(reason)
    low, high = USE_RETENTION_LIMITS
    if not isinstance(days, int) or isinstance(days, bool) or not low <= days <= high:
        raise ValidationError({"days": [f"Enter a whole number from {low} to {high}."]})
    row = _lock_policy()
    before = use_retention_days(row)
    if before == days and row.use_retention_days is not None:
        return row
    row.use_retention_days = days
    row.save(update_fields=["use_retention_days", "updated_at"])
    policy_record(
        action=PolicyAction.USE_RETENTION_CHANGED,
        actor=actor,
        reason=reason,
        target="use receipts",
        before={"use_retention_days": before},
        after={"use_retention_days": days},
    )
    return row


# --- retention rules ---------------------------------------------------------------------------


# What starts the background recompute of a run (facts.tasks.recompute_expiry, set from
# FactsConfig.ready()): the tasks call these services, so the services must not import them.
_recompute_starter: Callable[[int], object] | None = None


def recompute_starter_set(start: Callable[[int], object] | None) -> None:
    """Name what queues a retention run's recompute (the app's ready() does, once)."""
    global _recompute_starter
    _recompute_starter = start


def _start_run(event: PolicyEvent) -> RetentionRun:
    run = RetentionRun.objects.create(total=retention.governed_facts().count(), policy_event=event)
    start = _recompute_starter
    if start is not None:
        transaction.on_commit(lambda: start(run.pk))
    return run


@transaction.atomic
def retention_rule_save(
    *, proposal: RuleProposal, actor: Actor, reason: str
) -> tuple[RetentionRule, RetentionRun]:
    """Create or change a rule, then recompute expiry dates in the background."""
    reason = _reason(reason)
    _lock_policy()
    clean = check_rule(proposal)
    if clean.pk is None:
        rule = RetentionRule()
        before = None
        action = PolicyAction.RULE_CREATED
    else:
        rule = RetentionRule.objects.filter(pk=clean.pk).first()
        if rule is None:
            raise ValidationError({"__all__": ["That rule was deleted meanwhile."]})
        before = rule.snapshot()
        action = PolicyAction.RULE_UPDATED
    rule.name = clean.name
    rule.category = clean.category
    rule.key_glob = clean.key_glob
    rule.sensitive = clean.sensitive
    rule.ttl_days = clean.ttl_days
    rule.enabled = True
    rule.save()
    event = policy_record(
        action=action,
        actor=actor,
        reason=reason,
        target=f"rule {rule.pk}: {rule.name}",
        before=before,
        after=rule.snapshot(),
    )
    return rule, _start_run(event)


@transaction.atomic
def retention_rule_delete(*, rule_id: int, actor: Actor, reason: str) -> RetentionRun:
    reason = _reason(reason)
    _lock_policy()
    rule = RetentionRule.objects.filter(pk=rule_id).first()
    if rule is None:
        raise ValidationError({"__all__": ["That rule was already deleted."]})
    before = rule.snapshot()
    target = f"rule {rule.pk}: {rule.name}"
    rule.delete()
    event = policy_record(
        action=PolicyAction.RULE_DELETED, actor=actor, reason=reason, target=target, before=before
    )
    return _start_run(event)
