"""One turn as the agent had it: the facts it was given and the facts it recalled, from the
use receipts, each with its current value (masked when sensitive) or "since deleted"."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memoryadmin.facts.models import MemoryFact
from memoryadmin.usage import selectors as usage_selectors
from memoryadmin.usage.models import UseHow

from ..roles import VIEWER
from .common import revealed_keys, staff_required, subject_or_404


@staff_required(VIEWER)
def turn(request: HttpRequest, subject_id: str, session_tag: str, turn_id: str) -> HttpResponse:
    """Three queries whatever the turn: the traveller, the receipts, the traveller's facts."""
    subject = subject_or_404(subject_id)
    uses = usage_selectors.turn_uses(subject_id, session_tag, turn_id)
    facts = {}
    if uses:
        facts = {
            fact.pk: fact
            for fact in MemoryFact.objects.filter(
                subject_id=subject_id, pk__in={use.fact_id for use in uses}
            ).only("subject_id", "key", "value", "sensitive", "status")
        }
    revealed = revealed_keys(request, subject_id)
    sections = {UseHow.INJECTED: [], UseHow.RECALLED: []}
    for use in uses:
        fact = facts.get(use.fact_id)
        sections[use.how].append(
            {
                "use": use,
                "fact": fact,
                "masked": fact is not None and fact.sensitive and fact.key not in revealed,
            }
        )
    return render(
        request,
        "staff/turn.html",
        {
            "subject": subject,
            "session_tag": session_tag,
            "turn_id": turn_id,
            "injected": sections[UseHow.INJECTED],
            "recalled": sections[UseHow.RECALLED],
            "found": bool(uses),
        },
        status=200 if uses else 404,
    )
