"""Learned facts to sample: written as extraction (naming its job) or the agent writes them."""

from __future__ import annotations

import itertools

import pytest

from memoryadmin.extraction.models import ExtractionJob
from memoryadmin.extraction.prompts import PROMPT_VERSION
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor

_TURNS = itertools.count(1)


def learn(
    subject_id: str,
    key: str,
    value: str,
    category: str = "preference",
    *,
    by: str = "extraction",
    model: str = "claude-test",
) -> None:
    """One fact learned the way production learns it: extraction names its job in the event's
    actor label (runtime.py), the agent writes as its token."""
    if by == "extraction":
        job = ExtractionJob.objects.create(
            subject_id=subject_id,
            session_tag="0123456789ab",
            turn_id=f"turn-{next(_TURNS)}",
            status="succeeded",
            model=model,
            prompt_version=PROMPT_VERSION,
        )
        actor = Actor.extraction(f"extraction job {job.pk}")
    else:
        actor = Actor.agent("host-1")
    services.fact_upsert(
        subject_id=subject_id,
        facts=[services.FactDraft(key, value, category)],
        actor=actor,
    )


@pytest.fixture
def learned_ten(db) -> list[str]:
    """Ten travellers with one learned fact each (English and Chinese, two categories)."""
    subjects = []
    for n in range(10):
        subject = f"FF-Q-{n:03d}"
        if n % 2:
            learn(subject, "seat_preference", "偏好靠走道座位", "preference")
        else:
            learn(subject, "home_airport", "Flies from Taipei Songshan", "context", by="agent")
        subjects.append(subject)
    return subjects
