"""The write plan: what a write does to a traveller's facts, decided in Python from the locked
rows, with no I/O. Every writer of a fact's version goes through it: the agent's upsert (a
batch of drafts) and a person's single-fact change (edit, portal correction, expiry,
sensitivity, a review decision). Its output is the rows to insert and update and their events;
`commit.py` writes them. The rules it keeps in one place:

- a new version: `version` + 1, `changed_at` now (what the desk shows as "Updated");
- restated words (`restate`): the new value and category, `updated_at` (retention counts from
  it), the draft's quote or none (never the old version's), the evidence origin of the writer,
  and the current writer (`rewritten_by`, `rewritten_by_label`) when the words change;
- the retention a version falls under (`row_expiry`), and a snapshot per event.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .. import retention
from ..actors import Actor
from ..errors import FactConflict
from ..models import ActorKind, EventAction, FactStatus, RetentionRule
from ..selectors import AgentFact, MemoryConfig
from ..validation import CleanFact, classify_sensitive, normalize_key

# The expected version of a fact that must not exist yet (versions start at 1).
ABSENT = 0
# A batch is stamped in order, a microsecond apart: a later fact of the batch is the newer one.
_STEP = timedelta(microseconds=1)

# A fact as the plan reads and writes it: the columns of `SQL_EXISTING` (`FACT_COLUMNS`), and,
# once planned, `changed_at`, `rewritten_by` and `rewritten_by_label`.
Row = dict[str, Any]
# key, action, before, after: the snapshots as JSON text (or None), as the statement takes them.
PlannedEvent = tuple[str, str, str | None, str | None]

FACT_COLUMNS = (
    "id",
    "key",
    "value",
    "category",
    "status",
    "sensitive",
    "expires_at",
    "expiry_pinned",
    "version",
    "source_session_id",
    "created_at",
    "updated_at",
    "evidence",
    "evidence_origin",
    "restricted_at",
)


@dataclass(frozen=True)
class FactDraft:
    """A candidate fact as a caller hands it in; validate_fact cleans it."""

    key: Any
    value: Any
    category: Any = None
    # The traveller's words behind it, already checked against the turn by the caller when it
    # could be (extraction); the upsert still bounds it and runs it through the write filter,
    # and drops it (never the fact) when it fails.
    evidence: Any = ""


@dataclass(frozen=True)
class FactState:
    """A fact as this write committed it (or found it unchanged), so callers can answer from it
    without reading again (a later read could show another writer's state)."""

    key: str
    value: str
    category: str
    updated_at: datetime
    source_session_id: str
    version: int
    status: str
    sensitive: bool
    expires_at: datetime | None
    agent_visible: bool  # active, unexpired, memory on, the traveller has not paused its use


@dataclass
class UpsertResult:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    sent_to_review: list[str] = field(default_factory=list)
    # Restricted facts (kept while checked): this write left their value alone.
    kept_restricted: list[str] = field(default_factory=list)
    states: dict[str, FactState] = field(default_factory=dict)
    agent_facts: list[AgentFact] = field(default_factory=list)

    @property
    def changed(self) -> list[str]:
        return self.created + self.updated


@dataclass
class WritePlan:
    """The rows to insert and to update, and one event per changed fact, in order."""

    inserts: list[Row] = field(default_factory=list)
    updates: list[Row] = field(default_factory=list)
    events: list[PlannedEvent] = field(default_factory=list)
    result: UpsertResult = field(default_factory=UpsertResult)

    def __bool__(self) -> bool:
        return bool(self.inserts or self.updates or self.events)


class Batch(dict[str, CleanFact]):
    """A batch's clean facts by key, in the order first named (a new fact's place); `rank` is
    where each key was last named, which orders their stamps: a later fact is the newer one."""

    rank: dict[str, int]


# --- the rules ----------------------------------------------------------------------------------


def snapshot(fact: Mapping[str, Any] | Any) -> dict[str, Any]:
    """What an event keeps of a fact: a model instance or a planned row (a mapping)."""
    row = fact if isinstance(fact, Mapping) else vars(fact)
    expires_at = row["expires_at"]
    shot = {
        "value": row["value"],
        "category": row["category"],
        "status": row["status"],
        "sensitive": row["sensitive"],
        "expires_at": expires_at.isoformat() if expires_at else None,
        "version": row["version"],
    }
    # The quote is the traveller's words: kept with the version it supports, and blanked with
    # the value when the fact is erased (the snapshots go whole).
    if row.get("evidence"):
        shot["evidence"] = row["evidence"]
    return shot


def row_expiry(row: Mapping[str, Any], rules: Iterable[RetentionRule]) -> datetime | None:
    """The expiry a version falls under: its pinned date, else its rule's, counted from when
    its value last changed (see facts.retention for the precedence)."""
    if row["expiry_pinned"]:
        return row["expires_at"]
    rule = retention.winning_rule(
        rules, key=row["key"], category=row["category"], sensitive=row["sensitive"]
    )
    return retention.expiry_for(rule, row["updated_at"])


def is_unchanged(row: Mapping[str, Any] | Any, clean: CleanFact, now: datetime) -> bool:
    """Whether restating `clean` changes nothing: the same value as stored (both are cleaned, so
    spacing, NFC and invisible characters already agree; a change of case is a correction and
    is kept, as upstream keeps it), the same category, and the held fact has not expired
    (restating an expired fact revives it). The upsert and the import both decide with this."""
    held = row if isinstance(row, Mapping) else vars(row)
    expires_at = held["expires_at"]
    return (
        held["value"] == clean.value
        and held["category"] == clean.category
        and (expires_at is None or expires_at > now)
    )


def _event(key: str, action: str, before: Row | None, after: Row) -> PlannedEvent:
    return (
        key,
        action,
        json.dumps(snapshot(before)) if before is not None else None,
        json.dumps(snapshot(after)),
    )


def next_version(row: Mapping[str, Any], *, at: datetime, **changes: Any) -> Row:
    """A fact's next version: a copy with `changes`, the version bumped, `changed_at` moved."""
    new = dict(row)
    new.update(changes, version=row["version"] + 1, changed_at=at)
    return new


def restate(
    row: Mapping[str, Any],
    clean: CleanFact,
    *,
    actor: Actor,
    at: datetime,
    session_tag: str = "",
) -> Row:
    """A new version with new words (or a new category): `updated_at` moves (retention counts
    from it); the quote is the draft's or none, never the old version's; the evidence origin is
    the writer's; the writer of the words (`rewritten_by`) changes only with the value (a new
    category alone is not new words): a person's kind and name, or none for the agent,
    extraction or an import."""
    new = next_version(
        row,
        at=at,
        value=clean.value,
        category=str(clean.category),
        updated_at=at,
        source_session_id=session_tag or row["source_session_id"],
        evidence=clean.evidence,
        evidence_origin=str(actor.origin),
    )
    if clean.value != row["value"]:
        new["rewritten_by"], new["rewritten_by_label"] = actor.rewriter
    return new


def change_plan(
    row: Mapping[str, Any],
    new: Row,
    *,
    action: str,
    rules: Iterable[RetentionRule] | None = None,
) -> WritePlan:
    """One fact's change by a person: the row `new` (from `restate` or `next_version`), its
    expiry recomputed under `rules` when given (a change that moves what retention reads), and
    its event with both snapshots."""
    if rules is not None:
        new["expires_at"] = row_expiry(new, rules)
    return WritePlan(updates=[new], events=[_event(new["key"], action, dict(row), new)])


# --- the agent's upsert -------------------------------------------------------------------------


def check_versions(
    existing: Mapping[str, Mapping[str, Any]], expected_versions: Mapping[str, int] | None
) -> None:
    """If-Match: every named fact at the version named (`ABSENT`: not held yet), or nothing."""
    for raw_key, version in (expected_versions or {}).items():
        current = existing.get(normalize_key(raw_key))
        if version == ABSENT and current is None:
            continue  # an add: the key must not be held yet (checked under the lock)
        if current is None or current["version"] != version:
            raise FactConflict(
                "The fact was changed since it was read; fetch it again and retry.",
                current_version=current["version"] if current else None,
            )


def upsert_plan(
    *,
    cleaned: Mapping[str, CleanFact],
    existing: Mapping[str, Mapping[str, Any]],
    use_paused: bool,
    actor: Actor,
    session_tag: str,
    expected_versions: Mapping[str, int] | None,
    config: MemoryConfig,
    now: datetime,
) -> WritePlan:
    """What a batch changes, from the locked rows: the Django path and the async path
    (DjangoMemoryStore) write exactly the same rows and events."""
    check_versions(existing, expected_versions)
    plan = WritePlan()
    result = plan.result
    rules = config.rules
    visible_to_agent = config.settings.memory_enabled and not use_paused
    rank = getattr(cleaned, "rank", {})
    # Staff facts go through the same classifier: masked and under the sensitive-facts rule,
    # but not held for review (a person wrote them, after the form's warning).
    classify = actor.is_automated or actor.kind == ActorKind.STAFF
    origin = str(actor.origin)
    for position, (key, clean) in enumerate(cleaned.items()):
        stamp = now + _STEP * rank.get(key, position)
        topic = classify_sensitive(clean.key, clean.value) if classify else None
        held = topic is not None and actor.is_automated
        current = existing.get(key)
        if current is None:
            row: Row = {
                "key": key,
                "value": clean.value,
                "category": str(clean.category),
                "status": FactStatus.PENDING_REVIEW if held else FactStatus.ACTIVE,
                "sensitive": topic is not None,
                "expiry_pinned": False,
                "expires_at": None,
                "version": 1,
                "source_session_id": session_tag,
                "updated_at": stamp,
                "evidence": clean.evidence,
                "evidence_origin": origin,
            }
            row["expires_at"] = row_expiry(row, rules)
            plan.inserts.append(row)
            plan.events.append((key, EventAction.CREATED, None, json.dumps(snapshot(row))))
            result.created.append(key)
        elif current.get("restricted_at") is not None:
            # Kept while the traveller's doubt is checked: no writer but a person's correction
            # (`fact_edit`) changes its value. Nothing is written; the result says so, and its
            # state is not the agent's to see.
            result.kept_restricted.append(key)
            result.states[key] = fact_state(current, False, now)
            continue
        elif is_unchanged(current, clean, now):
            result.unchanged.append(key)
            result.states[key] = fact_state(current, visible_to_agent, now)
            continue
        else:
            row = restate(current, clean, actor=actor, at=stamp, session_tag=session_tag)
            row.setdefault("rewritten_by", None)  # None: the statement keeps the column
            row.setdefault("rewritten_by_label", None)
            expires_at = row["expires_at"]
            if row["expiry_pinned"] and expires_at is not None and expires_at <= now:
                row["expiry_pinned"] = False  # restating an expired fact revives it
            if topic:
                row["sensitive"] = True
            if held:
                row["status"] = FactStatus.PENDING_REVIEW
            row["expires_at"] = row_expiry(row, rules)
            plan.updates.append(row)
            plan.events.append(_event(key, EventAction.UPDATED, current, row))
            result.updated.append(key)
        if row["status"] == FactStatus.PENDING_REVIEW:
            result.sent_to_review.append(key)
        result.states[key] = fact_state(row, visible_to_agent, now)
    return plan


def fact_state(row: Mapping[str, Any], visible_to_agent: bool, now: datetime) -> FactState:
    expires_at = row["expires_at"]
    return FactState(
        key=row["key"],
        value=row["value"],
        category=row["category"],
        updated_at=row["updated_at"],
        source_session_id=row["source_session_id"],
        version=row["version"],
        status=str(row["status"]),
        sensitive=row["sensitive"],
        expires_at=expires_at,
        agent_visible=(
            row["status"] == FactStatus.ACTIVE
            and (expires_at is None or expires_at > now)
            and visible_to_agent
        ),
    )
