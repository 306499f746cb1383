"""manage.py skill_topics [--check] [--file PATH]

Writes the catalogue of the airline's keys (`facts/topics.py`) into SKILL.md, between its two
marker comments, so the agent's skill and the extraction prompt name the same keys. `--check`
changes nothing and exits 1 when the table is out of date (the tests run it on the real file)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryadmin.facts.topics import skill_table

START = "<!-- topics:start"
END = "<!-- topics:end -->"
_BLOCK = re.compile(r"(?P<start><!-- topics:start[^\n]*-->\n).*?(?P<end><!-- topics:end -->)", re.S)


def with_table(text: str) -> str:
    """SKILL.md's text with the table between the markers replaced by the catalogue's."""
    if not _BLOCK.search(text):
        raise CommandError(f"SKILL.md has no {START} ... {END} markers.")
    return _BLOCK.sub(
        lambda match: match["start"] + skill_table() + "\n" + match["end"], text, count=1
    )


class Command(BaseCommand):
    help = "Write the catalogue of the airline's keys into SKILL.md (or --check it is current)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--file",
            type=Path,
            default=Path(settings.BASE_DIR) / "client" / "memoryadmin_client" / "SKILL.md",
            help="The SKILL.md to write or check.",
        )
        parser.add_argument(
            "--check", action="store_true", help="Change nothing; exit 1 if it is out of date."
        )

    def handle(self, *args: Any, file: Path, check: bool, **options: Any) -> None:
        text = file.read_text(encoding="utf-8")
        wanted = with_table(text)
        if check:
            if wanted != text:
                self.stderr.write(f"{file}: the topics table is out of date; run skill_topics.")
                sys.exit(1)
            self.stdout.write(f"{file}: the topics table is current.")
            return
        if wanted != text:
            file.write_text(wanted, encoding="utf-8")
            self.stdout.write(f"{file}: the topics table was rewritten.")
        else:
            self.stdout.write(f"{file}: the topics table is current.")
