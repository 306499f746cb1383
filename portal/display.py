"""How a traveller's facts read in the portal: grouped by meaning, each with where it came from.

Plain words only: a traveller never needs to know what a "key", an "origin" or a "category" is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import escape, format_html
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _

from memoryadmin.facts import selectors
from memoryadmin.facts.models import ActorKind, Category, EventAction, FactEvent, FactStatus
from memoryadmin.facts.models import MemoryFact as Fact

GROUPS = (
    (
        Category.PREFERENCE,
        _("Your preferences"),
        _("How you like to travel, so the assistant can suggest what suits you."),
    ),
    (
        Category.CONSTRAINT,
        _("Your travel rules"),
        _("Things that must or mustn't happen on your trips. The assistant always keeps these "
          "in mind."),
    ),
    (
        Category.CONTEXT,
        _("About you and your trips"),
        _("Background that helps the assistant understand your questions."),
    ),
)

# (who last set the words, was it the first time) -> sentence with the date.
_SOURCES = {
    (ActorKind.EXTRACTION, True): _("Learned from a conversation on %(date)s"),
    (ActorKind.EXTRACTION, False): _("Updated from a conversation on %(date)s"),
    (ActorKind.AGENT, True): _("Saved by the assistant during a chat on %(date)s"),
    (ActorKind.AGENT, False): _("Updated by the assistant during a chat on %(date)s"),
    (ActorKind.STAFF, True): _("Added by our support team on %(date)s"),
    (ActorKind.STAFF, False): _("Corrected by our support team on %(date)s"),
    (ActorKind.CUSTOMER, True): _("You added this on %(date)s"),
    (ActorKind.CUSTOMER, False): _("You changed this on %(date)s"),
}
_OTHER_SOURCE = {True: _("Added on %(date)s"), False: _("Changed on %(date)s")}
_ORIGIN_KIND = {
    "extraction": ActorKind.EXTRACTION,
    "agent": ActorKind.AGENT,
    "staff": ActorKind.STAFF,
    "customer": ActorKind.CUSTOMER,
}


@dataclass(frozen=True)
class FactCard:
    fact: Fact
    source: str  # e.g. "Learned from a conversation on <time ...>28 Nov 2026</time>", escaped
    pending: bool
    paused: bool
    expired: bool

    @property
    def key(self) -> str:
        return self.fact.key

    @property
    def value(self) -> str:
        return self.fact.value


def when_html(moment: datetime) -> str:
    local = timezone.localtime(moment)
    return format_html(
        '<time datetime="{}">{}</time>', local.isoformat(), date_format(local, "DATE_FORMAT")
    )


def source_sentence(fact: Fact, event: FactEvent | None) -> str:
    """Who last wrote these words, and when, as one escaped sentence."""
    if event is None:  # history trimmed by audit retention: fall back to the fact's own origin
        kind = _ORIGIN_KIND.get(fact.origin)
        first = fact.created_at == fact.updated_at
        when = fact.updated_at
    else:
        kind = ActorKind(event.actor_kind)
        first = event.action == EventAction.CREATED
        when = event.created_at
    sentence = (_SOURCES.get((kind, first)) if kind else None) or _OTHER_SOURCE[first]
    return mark_safe(escape(str(sentence)) % {"date": when_html(when)})  # noqa: S308 - ours


@dataclass(frozen=True)
class Group:
    category: str
    title: Any
    intro: Any
    cards: list[FactCard]


def traveller_view(subject_id: str) -> dict[str, Any]:
    """Everything the overview page shows, in three queries whatever the number of facts."""
    subject = selectors.subject_get(subject_id)
    paused_use = bool(subject and subject.memory_use_paused)
    facts = selectors.subject_facts(subject_id)
    sources = selectors.fact_sources(subject_id)
    now = timezone.now()
    by_category: dict[str, list[FactCard]] = {}
    for fact in sorted(facts, key=lambda item: (item.created_at, item.pk)):
        by_category.setdefault(fact.category, []).append(
            FactCard(
                fact=fact,
                source=source_sentence(fact, sources.get(fact.key)),
                pending=fact.status == FactStatus.PENDING_REVIEW,
                paused=paused_use,
                expired=fact.expires_at is not None and fact.expires_at <= now,
            )
        )
    groups = [
        Group(category, title, intro, by_category.get(category, []))
        for category, title, intro in GROUPS
    ]
    return {
        "groups": groups,
        "fact_count": len(facts),
        "learning_paused": bool(subject and subject.memory_paused),
        "use_paused": paused_use,
        "memory_enabled": selectors.memory_settings().memory_enabled,
    }
