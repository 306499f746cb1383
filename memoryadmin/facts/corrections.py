"""Listeners told when a person corrects a fact's value, or stops or resumes its use (GDPR
Art. 18), inside the transaction of that change.

`fact_edit` is the one path by which a person (staff, or the traveller in the portal) changes a
value; it calls every registered listener after the change is saved and before the transaction
commits, so whatever a listener writes commits with the correction or not at all. Apps above
`facts` (privacy: the `memory.fact.corrected` webhook event) register from their
`AppConfig.ready()`; `facts` never imports them.

The agent's and extraction's upserts, and imports, do not call listeners: they are the memory
learning, not a correction of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .actors import Actor

__all__ = [
    "Corrected",
    "RestrictionChanged",
    "notify_corrected",
    "notify_restriction",
    "register_correction_listener",
    "register_restriction_listener",
]


@dataclass(frozen=True)
class Corrected:
    """What a listener is told: never the value (listeners tell other systems, which must not
    learn it). `key` is here for computing its keyed hash; a listener must not store it."""

    subject_id: str
    key: str
    version: int
    actor_kind: str


Listener = Callable[[Corrected], None]

_LISTENERS: dict[str, Listener] = {}


def register_correction_listener(name: str, listener: Listener) -> None:
    """Called from an AppConfig.ready(); registering the same name again replaces it."""
    _LISTENERS[name] = listener


def notify_corrected(corrected: Corrected) -> None:
    """Inside the correcting transaction (called by `services.fact_edit`)."""
    for listener in _LISTENERS.values():
        listener(corrected)


@dataclass(frozen=True)
class RestrictionChanged:
    """A fact's use stopped (`restricted` True) or resumed, and why it resumed (`outcome`:
    "corrected", "confirmed" or "lifted"; "" when stopped). Never the value nor the traveller's
    note. `key` is for its keyed hash only."""

    subject_id: str
    key: str
    restricted: bool
    actor: Actor
    outcome: str = ""

    @property
    def actor_kind(self) -> str:
        return str(self.actor.kind)


RestrictionListener = Callable[[RestrictionChanged], None]

_RESTRICTION_LISTENERS: dict[str, RestrictionListener] = {}


def register_restriction_listener(name: str, listener: RestrictionListener) -> None:
    """Called from an AppConfig.ready(); registering the same name again replaces it."""
    _RESTRICTION_LISTENERS[name] = listener


def notify_restriction(change: RestrictionChanged) -> None:
    """Inside the restricting or lifting transaction (`services/restriction.py`)."""
    for listener in _RESTRICTION_LISTENERS.values():
        listener(change)
