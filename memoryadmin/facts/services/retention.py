"""Retention: the sweeps, the expiry recompute, and the policy services (settings, rules)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from .. import erasure, retention
from ..actors import Actor
from ..counting import count_erased
from ..models import (
    KEY_MAX_LENGTH,
    ActorKind,
    Category,
    EventAction,
    FactEvent,
    MemoryFact,
    MemorySettings,
    PolicyAction,
    PolicyEvent,
    RetentionRule,
    RetentionRun,
    RunStatus,
    Subject,
)
from ..selectors import (
    memory_config_invalidate,
)
from ..validation import (
    clean_reason,
    sanitize_text,
    validate_blocked_patterns,
)
from .events import (
    matching_rule,
)

PINNED_EXPIRY_ACTOR = Actor(ActorKind.RETENTION, "rule:expiry date set by a person")


@dataclass(frozen=True)
class ChunkResult:
    done: int
    more: bool


@transaction.atomic
def facts_sweep_expired(*, limit: int = 1000, now: datetime | None = None) -> ChunkResult:
    """Erase up to `limit` expired facts of travellers without a legal hold, through the one
    erasure path, each with the rule that expired it as actor. Rows are taken with
    FOR UPDATE SKIP LOCKED, so sweeps running at once never erase the same fact twice."""
    now = now or timezone.now()
    rows = list(
        MemoryFact.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(expires_at__lte=now, subject__legal_hold=False)
        .order_by()
        .values_list("subject_id", "key", "category", "sensitive", "expiry_pinned")[:limit]
    )
    if not rows:
        return ChunkResult(done=0, more=False)
    rules = retention.enabled_rules()
    actors: dict[tuple[str, str, bool], Actor] = {}  # a chunk repeats the same topics
    doomed = []
    for subject_id, key, category, sensitive, pinned in rows:
        actor = PINNED_EXPIRY_ACTOR
        if not pinned:
            topic = (key, category, sensitive)
            if topic not in actors:
                rule = matching_rule(rules, key=key, category=category, sensitive=sensitive)
                actors[topic] = PINNED_EXPIRY_ACTOR if rule is None else Actor.retention(rule)
            actor = actors[topic]
        doomed.append((subject_id, key, actor))
    erased = erasure.erase_facts(
        doomed, action=EventAction.DELETED, reason="Expired under the retention policy."
    )
    count_erased("retention_sweep", erased)
    return ChunkResult(done=erased, more=len(rows) == limit)


@transaction.atomic
def events_sweep_old(*, limit: int = 1000, now: datetime | None = None) -> ChunkResult:
    """Delete history older than the audit retention (memory settings). The history of a
    traveller under legal hold is kept: a hold preserves the record."""
    now = now or timezone.now()
    row = MemorySettings.objects.filter(pk=1).first() or MemorySettings()  # uncached: a policy
    cutoff = now - timedelta(days=row.audit_retention_days)
    ids = list(
        FactEvent.objects.select_for_update(skip_locked=True)
        .filter(created_at__lt=cutoff)
        .exclude(subject_id__in=Subject.objects.filter(legal_hold=True).values("subject_id"))
        .order_by()
        .values_list("pk", flat=True)[:limit]
    )
    if not ids:
        return ChunkResult(done=0, more=False)
    deleted, _ = FactEvent.objects.filter(pk__in=ids).delete()
    return ChunkResult(done=deleted, more=len(ids) == limit)


@transaction.atomic
def retention_recompute_chunk(*, run_id: int, limit: int = 1000) -> RetentionRun:
    """Give the next `limit` governed facts (by primary key) the expiry today's rules give them.
    A newer run makes this one stop: it will cover every fact with the newer rules anyway."""
    run = RetentionRun.objects.select_for_update().get(pk=run_id)
    if run.is_finished:
        return run
    if RetentionRun.objects.filter(pk__gt=run.pk).exists():
        run.status = RunStatus.SUPERSEDED
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "finished_at"])
        return run
    ids = list(
        retention.governed_facts()
        .filter(pk__gt=run.last_pk)
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )
    if ids:
        MemoryFact.objects.filter(pk__in=ids).update(
            expires_at=retention.expiry_expression(retention.enabled_rules())
        )
        run.done += len(ids)
        run.last_pk = ids[-1]
        run.status = RunStatus.RUNNING
    if len(ids) < limit:
        run.status = RunStatus.DONE
        run.total = max(run.total, run.done)
        run.finished_at = timezone.now()
    run.save(update_fields=["done", "last_pk", "status", "total", "finished_at"])
    return run


# --- staff dashboard ----------------------------------------------------------------------------


# --- policy: memory settings and retention rules, as privacy admins change them ------------
#
# Policy services: memory settings and retention rules, as privacy admins change them.
#
# Each is keyword-only and one transaction, requires a reason, and writes a PolicyEvent with the
# acting person and the before/after values. Policy changes are serialized by locking the settings
# row, so two admins cannot save rules that tie with each other at the same moment. A rule change
# starts a RetentionRun that a Celery task walks in chunks (facts.tasks.recompute_expiry).

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


def clean_settings(values: dict[str, Any]) -> dict[str, Any]:
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
    clean = clean_settings(values)
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


def use_retention_days(row: MemorySettings) -> int:
    """The days use receipts are kept: the settings row's, else MEMORY_USE_RETENTION_DAYS."""
    days = row.use_retention_days
    return settings.MEMORY_USE_RETENTION_DAYS if days is None else days


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


@dataclass(frozen=True)
class RuleProposal:
    """A rule as a form hands it in; `pk` set when editing."""

    name: str
    category: str
    key_glob: str
    sensitive: bool | None
    ttl_days: int | None
    pk: int | None = None


def clean_rule(proposal: RuleProposal) -> RuleProposal:
    errors: dict[str, list[str]] = {}
    name = sanitize_text(proposal.name or "")
    if not name or len(name) > 100:
        errors["name"] = ["Give the rule a short name (at most 100 characters)."]
    if proposal.category not in ("", *Category.values):
        errors["category"] = ["Choose a category or any."]
    glob = (proposal.key_glob or "").strip().lower()
    if glob and (len(glob) > KEY_MAX_LENGTH or not retention.GLOB_CHARS.match(glob)):
        errors["key_glob"] = [
            "Use letters, digits and _ with * for any run of characters and ? for one, e.g. meal_*."
        ]
    if proposal.ttl_days is not None and not 1 <= proposal.ttl_days <= 36500:
        errors["ttl_days"] = ["Enter a number of days from 1 to 36500, or keep until deleted."]
    if errors:
        raise ValidationError(errors)
    return RuleProposal(
        name=name,
        category=proposal.category,
        key_glob=glob,
        sensitive=proposal.sensitive,
        ttl_days=proposal.ttl_days,
        pk=proposal.pk,
    )


def _as_rule(proposal: RuleProposal) -> RetentionRule:
    return RetentionRule(
        pk=proposal.pk,
        name=proposal.name,
        category=proposal.category,
        key_glob=proposal.key_glob,
        sensitive=proposal.sensitive,
        ttl_days=proposal.ttl_days,
    )


def rules_after(
    *, proposal: RuleProposal | None = None, delete_pk: int | None = None
) -> list[RetentionRule]:
    """The enabled rule set as it would be after saving `proposal` or deleting a rule."""
    rules = [
        rule
        for rule in retention.enabled_rules()
        if rule.pk != delete_pk and (proposal is None or rule.pk != proposal.pk)
    ]
    if proposal is not None:
        rules.append(_as_rule(proposal))
    return rules


def check_rule(proposal: RuleProposal) -> RuleProposal:
    """Validate a proposal and refuse one that would tie with an existing rule."""
    clean = clean_rule(proposal)
    others = [rule for rule in retention.enabled_rules() if rule.pk != clean.pk]
    tie = retention.find_tie(_as_rule(clean), others)
    if tie is not None:
        raise ValidationError(
            {
                "__all__": [
                    f"This rule would tie with “{tie.name}”: both match the same facts with "
                    "the same precedence, so neither would clearly win. Narrow one of them "
                    "(a category, a key pattern or sensitivity) or change that rule instead."
                ]
            }
        )
    return clean


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


# --- reads -------------------------------------------------------------------------------------


def policy_history(*, limit: int = 200) -> list[PolicyEvent]:
    """The newest policy events with their actors (one query)."""
    return list(
        PolicyEvent.objects.select_related("actor_user").order_by("-created_at", "-id")[:limit]
    )
