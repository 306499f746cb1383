"""Bulk import of a memory file's facts in set-based chunks (COPY)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from django.db import connection, models, transaction
from django.utils import timezone

from ..actors import Actor
from ..counting import count_blocked
from ..errors import (
    FactInvalid,
)
from ..keyhash import event_key_hash
from ..models import (
    SUBJECT_ID_MAX_LENGTH,
    EventAction,
    FactEvent,
    FactStatus,
    MemoryFact,
    RetentionRule,
    Subject,
)
from ..selectors import (
    memory_settings,
    retention_rules,
)
from ..validation import (
    CleanFact,
    MemoryWriteFilter,
    classify_sensitive,
    clean_reason,
    clean_subject_id,
    normalize_key,
    sanitize_text,
    validate_fact,
)
from .plan import (
    is_unchanged,
    row_expiry,
    snapshot,
)

# --- bulk import ------------------------------------------------------------------------------

IMPORT_CHUNK_SIZE = 5000


@dataclass(frozen=True)
class ImportDraft:
    """A fact from a memory file: its own time and session tag are kept (a live write stamps
    the server's). `position` locates it in the file for reports."""

    subject_id: Any
    key: Any
    value: Any
    category: Any = None
    updated_at: datetime | None = None
    session_tag: str = ""
    position: int = 0


@dataclass
class ImportResult:
    """Counts, and where refused facts were (subject and key, or position): never a value."""

    read: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    kept_newer: int = 0
    kept_restricted: int = 0  # restricted facts (kept while checked): left as they are
    sent_to_review: int = 0
    skipped_paused: int = 0
    invalid: list[tuple[str, str]] = field(default_factory=list)
    blocked: list[tuple[str, str]] = field(default_factory=list)

    def add(self, other: ImportResult) -> None:
        for name in (
            "read",
            "created",
            "updated",
            "unchanged",
            "kept_newer",
            "kept_restricted",
            "sent_to_review",
            "skipped_paused",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.invalid.extend(other.invalid)
        self.blocked.extend(other.blocked)


def _where(draft: ImportDraft, key: str = "") -> tuple[str, str]:
    """Subject and key of a refused fact, for the report; the position when they are unusable."""
    subject = draft.subject_id if isinstance(draft.subject_id, str) else ""
    subject = sanitize_text(subject)[:SUBJECT_ID_MAX_LENGTH] or f"(entry {draft.position})"
    return subject, key or (normalize_key(draft.key) if isinstance(draft.key, str) else "") or (
        f"(entry {draft.position})"
    )


def facts_import(
    *,
    facts: Iterable[ImportDraft],
    actor: Actor,
    reason: str = "",
    chunk_size: int = IMPORT_CHUNK_SIZE,
    progress: Any = None,
) -> ImportResult:
    """Move an existing memory in: every fact validated and filtered like a live write, written
    in set-based chunks (a handful of statements per chunk, whatever its size), one FactEvent
    per created or changed fact, origin `import` for a system actor.

    Idempotent: a fact already held with the same value and category is left alone (no event),
    and one held with a newer `updated_at` than the file's is kept. Each chunk is one
    transaction, so an interrupted import is finished by running it again. Facts touching
    sensitive topics are held for review, as the agent's are. Travellers who paused learning
    get nothing imported. `progress(done)` is called after each chunk."""
    settings_row = memory_settings()
    write_filter = MemoryWriteFilter(settings_row.blocked_patterns)
    rules = retention_rules()
    total = ImportResult()
    chunk: list[ImportDraft] = []
    for draft in facts:
        chunk.append(draft)
        if len(chunk) >= chunk_size:
            total.add(_import_chunk(chunk, actor, reason, write_filter, rules))
            chunk = []
            if progress is not None:
                progress(total.read)
    if chunk:
        total.add(_import_chunk(chunk, actor, reason, write_filter, rules))
        if progress is not None:
            progress(total.read)
    count_blocked("import", len(total.blocked))
    return total


def _clean_drafts(
    chunk: Sequence[ImportDraft], write_filter: MemoryWriteFilter, result: ImportResult
) -> dict[tuple[str, str], tuple[CleanFact, ImportDraft]]:
    """Validated and filtered facts by (subject, key); the same pair twice: the last wins."""
    cleaned: dict[tuple[str, str], tuple[CleanFact, ImportDraft]] = {}
    for draft in chunk:
        try:
            subject_id = clean_subject_id(draft.subject_id)
            clean = validate_fact(draft.key, draft.value, draft.category)
        except FactInvalid:
            result.invalid.append(_where(draft))
            continue
        raw_key = sanitize_text(draft.key) if isinstance(draft.key, str) else ""
        if not write_filter.check(clean.key, clean.value, raw_key=raw_key).allowed:
            result.blocked.append(_where(draft, clean.key))
            continue
        cleaned.pop((subject_id, clean.key), None)  # re-insert: file order of the last one
        cleaned[(subject_id, clean.key)] = (clean, draft)
    return cleaned


@transaction.atomic
def _import_chunk(
    chunk: Sequence[ImportDraft],
    actor: Actor,
    reason: str,
    write_filter: MemoryWriteFilter,
    rules: Sequence[RetentionRule],
) -> ImportResult:
    result = ImportResult(read=len(chunk))
    cleaned = _clean_drafts(chunk, write_filter, result)
    if not cleaned:
        return result
    subject_ids = sorted({subject_id for subject_id, _ in cleaned})
    Subject.objects.bulk_create(
        [Subject(subject_id=subject_id) for subject_id in subject_ids], ignore_conflicts=True
    )
    # Lock every traveller of the chunk, in a fixed order (no deadlock with another import),
    # so live writes to them wait; the same query says who paused learning.
    locked = (
        Subject.objects.select_for_update()
        .filter(subject_id__in=subject_ids)
        .order_by("subject_id")
        .values_list("subject_id", "memory_paused")
    )
    paused = {subject_id for subject_id, is_paused in locked if is_paused}
    existing = {
        (fact.subject_id, fact.key): fact
        for fact in MemoryFact.objects.filter(
            subject_id__in=subject_ids, key__in={key for _, key in cleaned}
        )
    }
    now = timezone.now()
    reason = clean_reason(reason)
    new_rows: list[Any] = []
    changed: list[tuple[MemoryFact, dict[str, Any]]] = []
    sessions: dict[tuple[str, str], str] = {}
    for (subject_id, key), (clean, draft) in cleaned.items():
        if subject_id in paused:
            result.skipped_paused += 1
            continue
        when = min(draft.updated_at or now, now)
        sessions[(subject_id, key)] = draft.session_tag
        fact = existing.get((subject_id, key))
        same = fact is not None and is_unchanged(fact, clean, now)
        topic = None if same else classify_sensitive(clean.key, clean.value)
        if fact is None:
            fact = _plain_row(  # no model instance: a third of the import's time at 10^5 facts
                MemoryFact,
                subject_id=subject_id,
                key=key,
                value=clean.value,
                category=clean.category,
                created_at=now,
                updated_at=when,
                changed_at=when,
                origin=actor.origin,
                source_session_id=draft.session_tag,
                sensitive=topic is not None,
                status=FactStatus.PENDING_REVIEW if topic else FactStatus.ACTIVE,
                version=1,
                expiry_pinned=False,
            )
            fact.expires_at = row_expiry(vars(fact), rules)
            new_rows.append(fact)
            result.created += 1
        elif fact.restricted_at is not None:
            result.kept_restricted += 1
            continue
        elif same:
            result.unchanged += 1
            continue
        elif fact.updated_at > when:
            result.kept_newer += 1
            continue
        else:
            before = snapshot(fact)
            fact.value, fact.category, fact.updated_at = clean.value, clean.category, when
            fact.changed_at = when
            fact.source_session_id = draft.session_tag or fact.source_session_id
            fact.rewritten_by, fact.rewritten_by_label = "", ""  # the file's words, no person's
            if fact.expiry_pinned and fact.expires_at is not None and fact.expires_at <= now:
                fact.expiry_pinned = False  # restating an expired fact revives it, as live
            if topic:
                fact.sensitive, fact.status = True, FactStatus.PENDING_REVIEW
            fact.version += 1
            fact.expires_at = row_expiry(vars(fact), rules)
            changed.append((fact, before))
            result.updated += 1
        if fact.status == FactStatus.PENDING_REVIEW and topic:
            result.sent_to_review += 1
    _copy_in(MemoryFact, new_rows)
    MemoryFact.objects.bulk_update(
        [fact for fact, _ in changed],
        [
            "value",
            "category",
            "updated_at",
            "changed_at",
            "source_session_id",
            "sensitive",
            "status",
            "version",
            "expires_at",
            "expiry_pinned",
            "rewritten_by",
            "rewritten_by_label",
        ],
        batch_size=1000,
    )
    event = {
        "actor_kind": actor.kind,
        "actor_user_id": getattr(actor.user, "pk", None),
        "actor_label": actor.label[:200],
        "reason": reason,
    }
    _copy_in(
        FactEvent,
        [
            _plain_row(
                FactEvent,
                subject_id=fact.subject_id,
                key=fact.key,
                key_hash=event_key_hash(fact.subject_id, fact.key),
                action=EventAction.CREATED,
                after=snapshot(fact),
                session_tag=fact.source_session_id,
                **event,
            )
            for fact in new_rows
        ]
        + [
            _plain_row(
                FactEvent,
                subject_id=fact.subject_id,
                key=fact.key,
                key_hash=event_key_hash(fact.subject_id, fact.key),
                action=EventAction.UPDATED,
                before=before,
                after=snapshot(fact),
                session_tag=sessions[(fact.subject_id, fact.key)],
                **event,
            )
            for fact, before in changed
        ],
    )
    return result


_ROW_DEFAULTS: dict[type[models.Model], dict[str, Any]] = {}


def _plain_row(model: type[models.Model], **values: Any) -> SimpleNamespace:
    """A new row as plain attributes (every column, defaults filled in) for _copy_in: building
    10^5 model instances costs more than everything else the import does."""
    defaults = _ROW_DEFAULTS.get(model)
    if defaults is None:
        defaults = {
            field.attname: field.get_default() if field.has_default() else None
            for field in model._meta.concrete_fields
            if not field.primary_key
        }
        _ROW_DEFAULTS[model] = defaults
    return SimpleNamespace(**{**defaults, **values})


def _copy_in(model: type[models.Model], rows: Sequence[Any]) -> None:
    """Insert many new rows in one statement: COPY (several times faster than multi-row
    INSERTs for an import of 10^5 facts)."""
    if not rows:
        return
    from psycopg.types.json import Jsonb

    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    table = connection.ops.quote_name(model._meta.db_table)
    now = timezone.now()
    # Plain values, not get_db_prep_save (a third of the import's time): psycopg adapts str,
    # int, bool and aware datetimes itself; JSON needs its wrapper, auto_now_add its time.
    json_at = {i for i, field in enumerate(fields) if isinstance(field, models.JSONField)}
    stamped = {i for i, field in enumerate(fields) if getattr(field, "auto_now_add", False)}
    names = [field.attname for field in fields]
    with connection.cursor() as cursor, cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            values = [getattr(row, name) for name in names]
            for i in json_at:
                if values[i] is not None:
                    values[i] = Jsonb(values[i])
            for i in stamped:
                values[i] = values[i] or now
            copy.write_row(values)
