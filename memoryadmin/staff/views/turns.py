"""One turn as the agent had it: the facts it was given and the facts it recalled, from the
use receipts, each with the value at the version the agent had (from the history snapshots),
what it is now when it changed since, or that it was deleted or erased since. An erased value
stays erased: the snapshot is blank and the page says when it went. Sensitive values masked
until revealed, the old one as the current one."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memoryadmin.facts.models import EventAction, FactEvent, MemoryFact
from memoryadmin.http_methods import read_only
from memoryadmin.usage import selectors as usage_selectors
from memoryadmin.usage.models import MemoryUse, UseHow

from ..roles import VIEWER
from .common import revealed_keys, staff_required, subject_or_404


def _row(
    use: MemoryUse,
    fact: MemoryFact | None,
    had: usage_selectors.Snapshot | None,
    revealed: Any,
) -> dict[str, Any]:
    """What the page says of one receipt."""
    sensitive = (fact is not None and fact.sensitive) or (had is not None and had.sensitive)
    masked = sensitive and (fact is None or fact.key not in revealed)
    erased_on = use.erased_at or (had.erased_on if had is not None else None)
    if fact is None or erased_on is not None:
        state = "erased" if erased_on is not None else "deleted"
    elif use.version is None:
        state = "unversioned"  # a receipt from before versions were kept: only the current
    elif had is None:
        state = "unknown" if fact.version != use.version else "same"
    else:
        state = "same" if fact.version == use.version or fact.value == had.value else "changed"
    return {
        "use": use,
        "fact": fact if state != "erased" else None,
        "had": had if state not in ("erased", "deleted") else None,
        "state": state,
        "erased_on": erased_on,
        "masked": masked,
    }


def _forgot_on(subject_id: str) -> Any:
    """When the traveller last asked us to forget everything (None: never)."""
    return (
        FactEvent.objects.filter(subject_id=subject_id, action=EventAction.SUBJECT_CLEARED)
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )


@staff_required(VIEWER)
@read_only
def turn(request: HttpRequest, subject_id: str, session_tag: str, turn_id: str) -> HttpResponse:
    """Four queries whatever the turn: the traveller, the receipts, the traveller's facts, the
    history snapshots of the versions the agent had."""
    subject = subject_or_404(subject_id)
    uses = usage_selectors.turn_uses(subject_id, session_tag, turn_id)
    facts = {}
    had: dict[tuple[str, int], usage_selectors.Snapshot] = {}
    if uses:
        facts = {
            fact.pk: fact
            for fact in MemoryFact.objects.filter(
                subject_id=subject_id, pk__in={use.fact_id for use in uses}
            ).only("subject_id", "key", "value", "sensitive", "status", "version")
        }
        had = usage_selectors.versions_had(subject_id, uses)
    revealed = revealed_keys(request, subject_id)
    sections: dict[str, list[dict[str, Any]]] = {UseHow.INJECTED: [], UseHow.RECALLED: []}
    for use in uses:
        snapshot = had.get((use.key_hash, use.version)) if use.version is not None else None
        sections[use.how].append(_row(use, facts.get(use.fact_id), snapshot, revealed))
    return render(
        request,
        "staff/turn.html",
        {
            "subject": subject,
            "session_tag": session_tag,
            "turn_id": turn_id,
            "injected": sections[UseHow.INJECTED],
            "recalled": sections[UseHow.RECALLED],
            # One note under a table whose receipts name no version, not one on every row.
            "assumed": {
                how: any(r["use"].version_assumed for r in rows) for how, rows in sections.items()
            },
            "found": bool(uses),
            # Only when nothing is found: whether "forget everything" took the receipts.
            "forgot": None if uses else _forgot_on(subject_id),
        },
        status=200 if uses else 404,
    )
