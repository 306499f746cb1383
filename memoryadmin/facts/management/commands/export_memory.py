"""manage.py export_memory [--output FILE] [--subject ID]

Writes every fact held as JSON Lines, {subject_id, key, value, category, updated_at,
source_session_id} a line: the form import_memory reads, so nobody is locked in. Facts waiting
for review and expired facts are included (they are held); erased ones no longer exist."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memoryadmin.facts.memory_files import write_export
from memoryadmin.facts.selectors import facts_for_export


class Command(BaseCommand):
    help = "Export facts as JSON Lines (the form import_memory reads)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--output", "-o", type=Path, default=None, help="Write here instead of standard output."
        )
        parser.add_argument("--subject", default=None, help="Only this traveller's facts.")

    def handle(self, *args: Any, output: Path | None, subject: str | None, **options: Any) -> None:
        rows = facts_for_export(subject_id=subject)
        if output is None:
            count = write_export(rows, self.stdout)
        else:
            with output.open("w", encoding="utf-8") as handle:
                count = write_export(rows, handle)
            self.stderr.write(f"Exported {count:,} facts to {output}.")
