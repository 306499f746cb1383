"""Reading memory files for `manage.py import_memory`, and writing them for `export_memory`.

Two forms are read:

* upstream's `JsonFileMemoryStore` file as that store writes it today, version 2:
  {"version": 2, "facts": {subject: {key: fact}}, "purges": {subject: n}}; and the older forms
  it reads too: one JSON document mapping each subject id to its facts (a list of fact objects,
  or an object keyed by fact key), optionally wrapped as {"facts": {...}} beside bookkeeping.
  Purge counters are not imported (a generation only orders clears against extractions in
  flight); the import's summary names the travellers whose counter it skipped;
* JSON Lines, one fact a line: {subject_id, key, value, category, updated_at,
  source_session_id}. `export_memory` writes this form, so an export imports back unchanged.

Nothing here writes to the database: `facts.services.facts_import` does, in chunks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from .validation import sanitize_text, session_tag

# Top-level keys of a wrapped upstream file that are bookkeeping, not subjects.
_WRAPPER_META = frozenset({"purges", "purge_generations", "generations", "version", "format"})
# The keys under which a wrapped file keeps its purge counters (version 2 writes "purges").
_PURGE_KEYS = ("purges", "purge_generations", "generations")
_SESSION_TAG = re.compile(r"[0-9a-f]{12}")


class MemoryFileError(ValueError):
    """The file is not in a form this importer reads; the message says where, never a value."""


@dataclass(frozen=True)
class ImportRecord:
    """One fact as read from a file, before validation. `position` locates it for reports
    (line number in JSON Lines, ordinal in an upstream file) without quoting it."""

    subject_id: Any
    key: Any
    value: Any
    category: Any
    updated_at: datetime | None
    session_tag: str
    position: int


def parse_timestamp(raw: object) -> datetime | None:
    """ISO 8601 (a trailing Z accepted); a time without a zone is read as UTC. None if absent
    or unreadable (the import then stamps the import time)."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    try:
        parsed = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def stored_session_tag(raw: object) -> str:
    """The 12-hex tag to keep: a tag is kept as it is, anything else (a raw session id) is
    hashed the way live writes hash it, so no raw session id is ever stored."""
    if not isinstance(raw, str) or not raw:
        return ""
    return raw if _SESSION_TAG.fullmatch(raw) else session_tag(raw)


def _record(subject_id: Any, data: Any, position: int, key: Any = None) -> ImportRecord:
    if not isinstance(data, Mapping):
        data = {}
    return ImportRecord(
        subject_id=subject_id,
        key=data.get("key", key),
        value=data.get("value"),
        category=data.get("category"),
        updated_at=parse_timestamp(data.get("updated_at")),
        session_tag=stored_session_tag(data.get("source_session_id")),
        position=position,
    )


def _is_wrapped(document: Mapping[str, Any]) -> bool:
    """{"facts": {...}} with nothing beside it but bookkeeping (version 2 and older wrappers);
    a subject may be called "facts", so any other top-level key means a bare document."""
    return isinstance(document.get("facts"), Mapping) and set(document) - {"facts"} <= (
        _WRAPPER_META
    )


def _upstream_subjects(document: Any) -> Mapping[str, Any]:
    if not isinstance(document, Mapping):
        raise MemoryFileError("The file is JSON but not an object of subjects.")
    if _is_wrapped(document):
        version = document.get("version")
        if version is not None and version not in (1, 2):
            raise MemoryFileError("Unknown upstream file version (this importer reads 1 and 2).")
        return document["facts"]
    return document


def skipped_purge_counters(document: Any) -> dict[str, int]:
    """Subject id -> purge counter of a wrapped upstream file: what the import does not bring
    over (non-zero counters only; a counter that is not a whole number is left out)."""
    if not isinstance(document, Mapping) or not _is_wrapped(document):
        return {}
    counters: dict[str, int] = {}
    for name in _PURGE_KEYS:
        section = document.get(name)
        if isinstance(section, Mapping):
            for subject_id, count in section.items():
                if isinstance(count, int) and not isinstance(count, bool) and count:
                    # printed in the summary: one line each, no control characters
                    counters[sanitize_text(str(subject_id))[:128]] = count
    return counters


def read_upstream_document(document: Any) -> list[ImportRecord]:
    """Every fact of an upstream JsonFileMemoryStore document, in the file's order (which is
    the order the facts were first written)."""
    records: list[ImportRecord] = []
    for subject_id, facts in _upstream_subjects(document).items():
        if isinstance(facts, Mapping):
            items: Iterable[tuple[Any, Any]] = facts.items()
        elif isinstance(facts, list):
            items = ((None, fact) for fact in facts)
        else:
            raise MemoryFileError(f"Subject #{len(records) + 1}: facts must be a list or object.")
        for key, fact in items:
            records.append(_record(subject_id, fact, len(records) + 1, key))
    return records


def iter_json_lines(lines: Iterable[str]) -> Iterator[ImportRecord]:
    """One record per non-empty line; a line that is not a JSON object is reported by number
    as a record with no data (it then fails validation and is counted as invalid)."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        subject_id = data.get("subject_id") if isinstance(data, Mapping) else None
        yield _record(subject_id, data, number)


def _first_line(path: Path) -> str:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                return line
    return ""


def is_json_lines(path: Path) -> bool:
    """JSON Lines when the first line is a complete object naming a subject_id."""
    try:
        first = json.loads(_first_line(path))
    except ValueError:
        return False
    return isinstance(first, Mapping) and "subject_id" in first


@dataclass
class MemoryFile:
    """A file opened for import: its form, how many facts it holds, and the facts in order.
    An upstream document is parsed once and kept; JSON Lines are streamed."""

    path: Path
    form: str
    total: int
    parsed: list[ImportRecord] | None = None
    skipped_purges: dict[str, int] = field(default_factory=dict)

    def records(self) -> Iterator[ImportRecord]:
        if self.parsed is not None:
            yield from self.parsed
            return
        with self.path.open(encoding="utf-8") as handle:
            yield from iter_json_lines(handle)


def _read_document(path: Path) -> Any:
    try:
        with path.open(encoding="utf-8") as handle:
            return json.load(handle)
    except ValueError as exc:
        raise MemoryFileError(
            f"Neither JSON Lines nor a JSON document (line {getattr(exc, 'lineno', '?')})."
        ) from None


def open_memory_file(path: Path) -> MemoryFile:
    if is_json_lines(path):
        with path.open(encoding="utf-8") as handle:
            total = sum(1 for line in handle if line.strip())
        return MemoryFile(path, "jsonl", total)
    document = _read_document(path)
    records = read_upstream_document(document)
    return MemoryFile(
        path, "upstream", len(records), records, skipped_purges=skipped_purge_counters(document)
    )


def export_line(
    *,
    subject_id: str,
    key: str,
    value: str,
    category: str,
    updated_at: datetime,
    source_session_id: str,
) -> str:
    """One JSON Lines record, the form import_memory reads back."""
    return json.dumps(
        {
            "subject_id": subject_id,
            "key": key,
            "value": value,
            "category": category,
            "updated_at": updated_at.isoformat(),
            "source_session_id": source_session_id or None,
        },
        ensure_ascii=False,
    )


def write_export(rows: Iterable[Mapping[str, Any]], out: IO[str]) -> int:
    count = 0
    for row in rows:
        out.write(export_line(**row) + "\n")
        count += 1
    return count
