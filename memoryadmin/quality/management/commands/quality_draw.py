"""`manage.py quality_draw [--size N]`: draw a quality sample now (as beat does weekly)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memoryadmin.facts.actors import Actor
from memoryadmin.quality.services import quality_sample_draw


class Command(BaseCommand):
    help = "Draw a quality sample of the facts learned in the last 7 days, for reviewers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--size", type=int, default=None, help="QUALITY_SAMPLE_SIZE if unset")

    def handle(self, *args: Any, size: int | None = None, **options: Any) -> None:
        sample = quality_sample_draw(actor=Actor.system("manage.py quality_draw"), size=size)
        taken = sample.items.count()
        self.stdout.write(
            f"Drew {taken} of {sample.candidates} facts learned in the last 7 days and not yet "
            "sampled this week "
            f"(sample {sample.pk}, week of {sample.week.isoformat()})."
        )
