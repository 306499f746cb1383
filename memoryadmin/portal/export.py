""""Download my data": the traveller's facts, the history of their facts and their switches.

Built on request and never stored, so erasure has no copy to chase. Erased values are shown as
erased; who acted is named by role only (support staff usernames and token names stay
internal).
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from memoryadmin.facts import selectors as fact_selectors
from memoryadmin.facts.erasure import is_key_digest
from memoryadmin.facts.models import FactEvent, MemoryFact
from memoryadmin.usage import selectors as usage_selectors
from memoryadmin.usage.display import why_known
from memoryadmin.usage.selectors import UseSummary

from . import selectors

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


def _fact(fact: MemoryFact, use: UseSummary | None) -> dict[str, Any]:
    why = why_known(fact)
    return {
        "key": fact.key,
        "value": fact.value,
        "category": fact.category,
        "status": fact.status,
        "learned_at": _when(fact.created_at),
        "changed_at": _when(fact.updated_at),
        "origin": fact.origin,
        "expires_at": _when(fact.expires_at),
        # Why it is known: your words it was learned from, or who wrote the current version.
        "evidence": {"source": why.kind, "quote": why.quote or None, "at": _when(why.on)},
        "use": {
            "conversations": use.conversations if use else 0,
            "injected": use.injected if use else 0,
            "recalled": use.recalled if use else 0,
            "last_used_at": _when(use.last_used_at) if use else None,
        },
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


def traveller_export(subject_id: str) -> dict[str, Any]:
    subject = fact_selectors.subject_get(subject_id)
    facts = list(fact_selectors.subject_facts(subject_id))
    uses = usage_selectors.use_summaries(facts)
    return {
        "exported_at": _when(timezone.now()),
        "facts": [_fact(fact, uses.get(fact.pk)) for fact in facts],
        "history": [_event(event) for event in selectors.subject_events(subject_id)],
        "switches": {
            "learn_from_my_conversations": not (subject and subject.memory_paused),
            "use_what_you_remember": not (subject and subject.memory_use_paused),
        },
    }
