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


def post_aisle_turn(agent, subject: str, *, session_id: str, turn_id: str):
    """A finished turn posted as an agent host posts it (the live load tests' learning half)."""
    return agent.post(
        f"/api/v1/subjects/{subject}/turns",
        json={
            "session_id": session_id,
            "turn_id": turn_id,
            "messages": [
                {"role": "user", "text": "I always take an aisle seat."},
                {"role": "assistant", "text": "Noted."},
            ],
        },
    )
