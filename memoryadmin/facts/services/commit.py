"""The one commit path of a write plan (`plan.py`): at most three statements whatever the batch
size, the rows of each as one JSON document (`jsonb_to_recordset`): the new facts, the changed
ones, their events. The upsert runs them on Django's connection or on an async psycopg one
(`plan_statements`); a person's change and an event alone on Django's (`plan_commit`)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.utils import timezone

from memoryadmin.db import hot_cursor

from ..actors import Actor
from ..keyhash import event_key_hash
from ..models import EventAction
from ..sql import SQL_INSERT_EVENTS, SQL_INSERT_FACTS, SQL_UPDATE_FACTS
from ..validation import clean_reason
from .plan import FACT_COLUMNS, PlannedEvent, Row, WritePlan

# A new fact's own columns (the statement fills the rest): key to expires_at as read, then these.
INSERT_COLUMNS = (*FACT_COLUMNS[1:7], "updated_at", "evidence", "evidence_origin")
UPDATE_COLUMNS = (
    "id",
    "value",
    "category",
    "source_session_id",
    "status",
    "sensitive",
    "expires_at",
    "expiry_pinned",
    "version",
    "updated_at",
    "changed_at",
    "evidence",
    "evidence_origin",
    "rewritten_by",
    "rewritten_by_label",
)


def _isoformat(value: datetime) -> str:
    return value.isoformat()


def _json_rows(rows: list[Row], columns: tuple[str, ...]) -> str:
    return json.dumps(
        [{name: row[name] for name in columns} for row in rows],
        default=_isoformat,  # the datetimes
    )


def _json_events(subject_id: str, events: list[PlannedEvent]) -> str:
    """The events' document; their snapshots are already JSON text, spliced in as they are."""
    parts = []
    for key, action, before, after in events:
        key_hash = event_key_hash(subject_id, key) if key else ""
        head = json.dumps({"key": key, "key_hash": key_hash, "action": str(action)})
        parts.append(f'{head[:-1]},"before":{before or "null"},"after":{after or "null"}}}')
    return "[" + ",".join(parts) + "]"


def plan_statements(
    plan: WritePlan,
    *,
    subject_id: str,
    actor: Actor,
    reason: str,
    session_tag: str,
    now: datetime,
) -> list[tuple[str, list[Any]]]:
    """The PostgreSQL statements of a plan: at most three, each batch of rows one document."""
    statements: list[tuple[str, list[Any]]] = []
    if plan.inserts:
        statements.append(
            (
                SQL_INSERT_FACTS,
                [
                    subject_id,
                    session_tag,
                    now,
                    str(actor.origin),
                    _json_rows(plan.inserts, INSERT_COLUMNS),
                ],
            )
        )
    if plan.updates:
        statements.append(
            (SQL_UPDATE_FACTS, [_json_rows(plan.updates, UPDATE_COLUMNS), subject_id])
        )
    if plan.events:
        statements.append(
            (
                SQL_INSERT_EVENTS,
                [
                    subject_id,
                    str(actor.kind),
                    actor.user.pk if actor.user is not None else None,
                    actor.label[:200],
                    clean_reason(reason),
                    session_tag,
                    now,
                    _json_events(subject_id, plan.events),
                ],
            )
        )
    return statements


def plan_commit(
    plan: WritePlan,
    *,
    subject_id: str,
    actor: Actor,
    reason: str,
    session_tag: str = "",
    now: datetime | None = None,
) -> None:
    """Run a plan's statements on Django's connection, in the caller's transaction (which
    holds the traveller's lock)."""
    statements = plan_statements(
        plan,
        subject_id=subject_id,
        actor=actor,
        reason=reason,
        session_tag=session_tag,
        now=now or timezone.now(),
    )
    with hot_cursor() as cursor:
        for sql, params in statements:
            cursor.execute(sql, params)


def record_event(
    *,
    subject_id: str,
    key: str,
    action: EventAction,
    actor: Actor,
    reason: str,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    session_tag: str = "",
) -> None:
    """An event that changes no fact (a reveal, a quality mark, a traveller's switch), through
    the same statement as every other: `key` "" for one about the traveller as a whole."""
    event: PlannedEvent = (
        key,
        action,
        json.dumps(before) if before is not None else None,
        json.dumps(after) if after is not None else None,
    )
    plan_commit(
        WritePlan(events=[event]),
        subject_id=subject_id,
        actor=actor,
        reason=reason,
        session_tag=session_tag,
    )
