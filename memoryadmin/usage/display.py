"""Why a fact is known, in words both faces share (the portal translates them): the traveller's
quote, or who wrote the current version instead."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memoryadmin.facts.choices import Origin
from memoryadmin.facts.models import MemoryFact


@dataclass(frozen=True)
class WhyKnown:
    kind: str  # said | saved | learned | staff | added | corrected | imported
    quote: str
    on: datetime


def why_known(fact: MemoryFact) -> WhyKnown:
    """The current version's source: its quote when it has one, else its writer. Facts from
    before evidence was kept have no `evidence_origin`; their `origin` stands in."""
    origin = fact.evidence_origin or fact.origin
    on = fact.updated_at
    if origin == Origin.STAFF:
        return WhyKnown("staff", "", on)
    if origin == Origin.CUSTOMER:  # the traveller's own first version is "added", not corrected
        return WhyKnown("corrected" if fact.version > 1 else "added", "", on)
    if origin == Origin.IMPORT:
        return WhyKnown("imported", "", on)
    if origin == Origin.AGENT:
        return WhyKnown("saved", fact.evidence, on)
    return WhyKnown("said" if fact.evidence else "learned", fact.evidence, on)
