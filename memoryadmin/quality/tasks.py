"""Beat's weekly draw of the quality sample."""

from __future__ import annotations

from celery import shared_task

from memoryadmin.facts.actors import Actor

from .services import quality_sample_draw


@shared_task
def quality_draw_task() -> int:
    """Draw this week's sample; returns how many facts it took."""
    sample = quality_sample_draw(actor=Actor.system("weekly draw"))
    return sample.items.count()
