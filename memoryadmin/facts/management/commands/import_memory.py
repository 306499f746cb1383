"""manage.py import_memory FILE [--reason TEXT] [--chunk-size N]

Moves an existing memory in: upstream's JsonFileMemoryStore file as that store writes it, or
JSON Lines of {subject_id, key, value, category, updated_at, source_session_id} (what
export_memory writes). Every fact is validated and filtered like a live write, keeps its
updated_at and session tag, gets origin `import` and one audit event. Refused facts are
counted and listed by subject and key, never printed. Running it again changes nothing."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import WriteFilterMisconfigured
from memoryadmin.facts.memory_files import MemoryFileError, open_memory_file
from memoryadmin.facts.services import IMPORT_CHUNK_SIZE, ImportDraft, ImportResult, facts_import

LISTED_AT_MOST = 50


class Progress:
    """A one-line bar on a terminal; on a pipe, a line at each tenth (logs stay readable)."""

    def __init__(self, total: int, stream: Any) -> None:
        self.total, self.stream = max(total, 1), stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.started = time.monotonic()
        self.last_tenth = -1

    def __call__(self, done: int) -> None:
        share = min(done / self.total, 1.0)
        line = (
            f"[{'#' * int(share * 30):<30}] {done:,}/{self.total:,} facts "
            f"({share:.0%}, {time.monotonic() - self.started:.1f}s)"
        )
        if self.tty:
            self.stream.write(f"\r{line}")
            if done >= self.total:
                self.stream.write("\n")
            self.stream.flush()
        elif int(share * 10) > self.last_tenth:
            self.last_tenth = int(share * 10)
            self.stream.write(line + "\n")


class Command(BaseCommand):
    help = "Import facts from an upstream JsonFileMemoryStore file or a JSON Lines export."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, help="The memory file to import.")
        parser.add_argument(
            "--reason", default="", help="Recorded on every audit event (the file name if empty)."
        )
        parser.add_argument(
            "--chunk-size",
            type=int,
            default=IMPORT_CHUNK_SIZE,
            help="Facts per transaction (default %(default)s).",
        )
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle(
        self,
        *args: Any,
        file: Path,
        reason: str,
        chunk_size: int,
        no_progress: bool,
        **options: Any,
    ) -> None:
        if not file.is_file():
            raise CommandError(f"No such file: {file}")
        if chunk_size < 1:
            raise CommandError("--chunk-size must be at least 1.")
        try:
            memory_file = open_memory_file(file)
        except (MemoryFileError, UnicodeDecodeError) as exc:
            raise CommandError(f"{file.name}: {exc}") from None
        form = "upstream JsonFileMemoryStore" if memory_file.form == "upstream" else "JSON Lines"
        self.stdout.write(f"{file.name}: {form}, {memory_file.total:,} facts")
        drafts = (
            ImportDraft(
                subject_id=record.subject_id,
                key=record.key,
                value=record.value,
                category=record.category,
                updated_at=record.updated_at,
                session_tag=record.session_tag,
                position=record.position,
            )
            for record in memory_file.records()
        )
        started = time.monotonic()
        try:
            result = facts_import(
                facts=drafts,
                actor=Actor.system(f"import_memory {file.name}"[:200]),
                reason=reason or f"imported from {file.name}",
                chunk_size=chunk_size,
                progress=None if no_progress else Progress(memory_file.total, sys.stderr),
            )
        except WriteFilterMisconfigured as exc:
            raise CommandError(exc.message) from None
        self.report(result, time.monotonic() - started)
        self.report_purges(memory_file.skipped_purges)

    def report_purges(self, counters: dict[str, int]) -> None:
        """Upstream's purge counters are not imported: a generation only orders a clear against
        an extraction in flight, and none is in flight across systems. Say which were skipped."""
        if not counters:
            return
        self.stdout.write(
            f"Not imported: the purge counters of {len(counters):,} travellers (a counter only "
            "orders a clear against an extraction in flight; here each starts at 0)."
        )
        for subject_id, count in list(counters.items())[:LISTED_AT_MOST]:
            self.stdout.write(f"  Purge counter skipped: subject {subject_id} ({count})")
        if len(counters) > LISTED_AT_MOST:
            self.stdout.write(f"  ... and {len(counters) - LISTED_AT_MOST:,} more")

    def report(self, result: ImportResult, seconds: float) -> None:
        self.stdout.write(
            f"Read {result.read:,} facts in {seconds:.1f}s: {result.created:,} created, "
            f"{result.updated:,} updated, {result.unchanged:,} unchanged, "
            f"{result.kept_newer:,} kept (newer here), {len(result.blocked):,} blocked by the "
            f"write filter, {len(result.invalid):,} invalid, {result.skipped_paused:,} skipped "
            f"(traveller paused learning); {result.sent_to_review:,} held for review as "
            "possibly sensitive."
        )
        for label, refused in (("Blocked", result.blocked), ("Invalid", result.invalid)):
            for subject_id, key in refused[:LISTED_AT_MOST]:
                self.stdout.write(f"  {label}: subject {subject_id} key {key}")
            if len(refused) > LISTED_AT_MOST:
                more = len(refused) - LISTED_AT_MOST
                self.stdout.write(f"  ... and {more:,} more {label.lower()}")
