"""Writing facts in tests the way the agent does, through the service (its events and all)."""

from __future__ import annotations

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.services import FactDraft


def agent_upsert(subject_id: str, *pairs: tuple[str, str]) -> None:
    """Save (key, value) pairs for one traveller as agent host "host-1"."""
    services.fact_upsert(
        subject_id=subject_id,
        facts=[FactDraft(key, value) for key, value in pairs],
        actor=Actor.agent("host-1"),
    )
