""""Download my data": the traveller's facts, the history of their facts and their switches.
Built here, below both faces, because the portal hands it to the traveller and staff hand it
over for an access request that came by phone, e-mail or letter.

Built on request and never stored, so erasure has no copy to chase. Erased values are shown as
erased; who acted is named by role only (support staff usernames and token names stay
internal).
"""

from __future__ import annotations

import json
from typing import Any

from django.utils import timezone

from memoryadmin.facts import selectors as fact_selectors
from memoryadmin.facts.erasure import is_key_digest
from memoryadmin.facts.models import FactEvent, MemoryFact

ERASED = "erased"
_BY = {
    "agent": "the assistant",
    "extraction": "the assistant, from a conversation",
    "staff": "support staff",
    "customer": "you",
    "retention": "the retention policy",
    "system": "the system",
}


def _when(moment: Any) -> str | None:
    return moment.isoformat() if moment else None


def _fact(fact: MemoryFact) -> dict[str, Any]:
    return {
        "key": fact.key,
        "value": fact.value,
        "category": fact.category,
        "status": fact.status,
        "learned_at": _when(fact.created_at),
        "changed_at": _when(fact.updated_at),
        "origin": fact.origin,
        "expires_at": _when(fact.expires_at),
    }


def _event(event: FactEvent) -> dict[str, Any]:
    erased = event.redacted_at is not None
    return {
        "at": _when(event.created_at),
        "key": ERASED if is_key_digest(event.key) else (event.key or None),
        "action": event.action,
        "by": _BY.get(event.actor_kind, event.actor_kind),
        "reason": event.reason,
        "before": ERASED if erased else event.before,
        "after": ERASED if erased else event.after,
    }


def _subject_events(subject_id: str) -> list[FactEvent]:
    """A traveller's whole history, oldest first."""
    return list(FactEvent.objects.filter(subject_id=subject_id).order_by("created_at", "id"))


def traveller_export(subject_id: str) -> dict[str, Any]:
    subject = fact_selectors.subject_get(subject_id)
    return {
        "exported_at": _when(timezone.now()),
        "facts": [_fact(fact) for fact in fact_selectors.subject_facts(subject_id)],
        "history": [_event(event) for event in _subject_events(subject_id)],
        "switches": {
            "learn_from_my_conversations": not (subject and subject.memory_paused),
            "use_what_you_remember": not (subject and subject.memory_use_paused),
        },
    }


def traveller_export_bytes(subject_id: str) -> bytes:
    """The file as handed over: its SHA-256 is the access request's evidence."""
    return json.dumps(traveller_export(subject_id), ensure_ascii=False, indent=2).encode("utf-8")
