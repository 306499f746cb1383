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
from django.utils.text import Truncator
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from memoryadmin.facts import selectors as fact_selectors
from memoryadmin.facts.keyhash import key_digest
from memoryadmin.facts.models import ActorKind, Category, EventAction, FactStatus
from memoryadmin.facts.models import MemoryFact as Fact
from memoryadmin.facts.topics import topic_label
from memoryadmin.usage import selectors as usage_selectors
from memoryadmin.usage.display import why_known
from memoryadmin.usage.selectors import UseSummary

from . import selectors

# 20 cards are a few screens on a phone: enough to scan, short enough to load fast.
FACTS_PER_PAGE = 20

GROUPS = (
    (
        Category.PREFERENCE,
        _("Your preferences"),
        _("How you like to travel, so the assistant can suggest what suits you."),
    ),
    (
        Category.CONSTRAINT,
        _("Your travel rules"),
        _(
            "Things that must or mustn't happen on your trips. The assistant always keeps these "
            "in mind."
        ),
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
    short: str  # the words cut to 60 characters, for the links' accessible names
    used: str = ""  # "Used in 3 conversations, last on 28 November", escaped; "" if never
    why: str = ""  # "You said on 28 November: “…”", escaped; "" without the traveller's words
    topic: str = ""  # "Seat preference": the key as a traveller reads it
    restricted: bool = False  # its use stopped while it is checked (the traveller's or staff's)

    @property
    def key(self) -> str:
        return self.fact.key

    @property
    def value(self) -> str:
        return self.fact.value


# The zones a traveller is likely to be shown in, by the name people use for them ("Taiwan
# time", 台灣時間), not the abbreviation ("CST" is also China's and America's Central time).
_ZONE_NAMES = {
    "Asia/Taipei": _("Taiwan time"),
    "Asia/Hong_Kong": _("Hong Kong time"),
    "Asia/Tokyo": _("Japan time"),
    "Asia/Singapore": _("Singapore time"),
    "Europe/London": _("UK time"),
    "UTC": _("UTC"),
}


def zone_label(moment: datetime) -> str:
    """The zone of the times on a page, in words; an unnamed zone as its offset ("UTC+05:30")."""
    named = _ZONE_NAMES.get(timezone.get_current_timezone_name())
    if named is not None:
        return str(named)
    offset = timezone.localtime(moment).strftime("%z")
    return f"UTC{offset[:3]}:{offset[3:]}"


def when_html(moment: datetime) -> str:
    local = timezone.localtime(moment)
    return format_html(
        '<time datetime="{}">{}</time>', local.isoformat(), date_format(local, "DATE_FORMAT")
    )


# Who rewrote the current words, when a person did (the fact's own columns): the
# traveller reads "you", never a staff member's name.
_REWRITTEN = {
    ActorKind.CUSTOMER: _("Corrected by you on %(date)s"),
    ActorKind.STAFF: _("Corrected by our support team on %(date)s"),
}


def source_sentence(fact: Fact, event: selectors.FactSource | None) -> str:
    """Who last wrote these words, and when, as one escaped sentence."""
    rewritten = _REWRITTEN.get(fact.rewritten_by)
    if rewritten is not None:
        return mark_safe(escape(str(rewritten)) % {"date": when_html(fact.updated_at)})  # noqa: S308
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


def why_sentence(fact: Fact) -> str:
    """The traveller's own words behind the current version, as one escaped sentence ("" when
    there are none). save_memory's quote not (yet) found in a turn the traveller posted
    ("saved") is the assistant's, never shown as their words: the source line says the
    assistant saved it."""
    why = why_known(fact)
    if why.quote and why.kind == "said":
        sentence = _("You said on %(date)s: “%(quote)s”")
        return mark_safe(
            escape(str(sentence))
            % {  # noqa: S308 - both parts escaped
                "date": when_html(why.on),
                "quote": escape(why.quote),
            }
        )
    return ""


def used_sentence(use: UseSummary | None, then: usage_selectors.Snapshot | None = None) -> str:
    """ "Used in 3 conversations, last on 28 November 2026", escaped; "" when never used. With
    `then` (the version the assistant had in that last chat, when it differs from today's
    words), what it had then: an erased version is never shown."""
    if use is None or use.last_used_at is None:
        return ""
    first = _count_sentence(use, use.last_used_at)
    both = _("%(used)s. %(earlier)s")  # the two sentences, punctuated in each language
    if then is not None and then.erased_on is not None:  # said, never shown
        erased = _("What the assistant had in that chat was erased on %(date)s")
        return mark_safe(  # noqa: S308 - every part escaped
            escape(str(both))
            % {"used": first, "earlier": escape(str(erased)) % {"date": when_html(then.erased_on)}}
        )
    if then is not None and then.redacted_on is not None:  # said, never shown
        redacted = _("What the assistant had in that chat was redacted on %(date)s")
        return mark_safe(  # noqa: S308 - every part escaped
            escape(str(both))
            % {
                "used": first,
                "earlier": escape(str(redacted)) % {"date": when_html(then.redacted_on)},
            }
        )
    if then is None or not then.value:
        return first
    earlier = _("In that chat the assistant had an earlier version: “%(value)s”")
    return mark_safe(  # noqa: S308 - every part escaped
        escape(str(both))
        % {"used": first, "earlier": escape(str(earlier)) % {"value": escape(then.value)}}
    )


def _count_sentence(use: UseSummary, last: datetime) -> str:
    sentence = ngettext(
        "Used in %(count)s conversation, last on %(date)s",
        "Used in %(count)s conversations, last on %(date)s",
        use.conversations,
    )
    return mark_safe(
        escape(sentence)
        % {  # noqa: S308 - ours
            "count": use.conversations,
            "date": when_html(last),
        }
    )


@dataclass(frozen=True)
class Group:
    category: str
    title: Any
    intro: Any
    cards: list[FactCard]
    count: int  # the group's facts on every page
    page: int  # the page where the group starts
    continued: bool  # the group started on an earlier page


@dataclass(frozen=True)
class GroupLink:
    """ "Your travel rules (12)", linking to the page where that group starts."""

    category: str
    title: Any
    count: int
    page: int


def page_number(raw: str | None, pages: int) -> int:
    """The page asked for, made sensible: not a number is the first page, past the end the last."""
    try:
        number = int(str(raw or "1").strip())
    except ValueError:
        return 1
    return min(max(number, 1), pages)


def page_links(number: int, pages: int) -> list[int | None]:
    """Page numbers to offer, GOV.UK style: the first, the last, the current one and its
    neighbours; None where numbers are left out (shown as an ellipsis)."""
    wanted = {1, pages, number - 1, number, number + 1}
    shown: list[int | None] = []
    for page in range(1, pages + 1):
        if page in wanted:
            shown.append(page)
        elif shown and shown[-1] is not None:
            shown.append(None)
    return shown


def traveller_view(subject_id: str, *, page: str | None = None) -> dict[str, Any]:
    """Everything the overview page shows, one page of facts at a time: four queries whatever
    the number of facts or of their uses (the subject with its counts, the page with its
    sources, the page's use counts, the session)."""
    overview = selectors.portal_overview(subject_id)
    subject = overview.subject
    paused_use = bool(subject and subject.memory_use_paused)
    pages = max(1, -(-overview.total // FACTS_PER_PAGE))
    number = page_number(page, pages)
    offset = (number - 1) * FACTS_PER_PAGE
    rows = (
        selectors.portal_facts_page(subject_id, offset=offset, limit=FACTS_PER_PAGE)
        if overview.total
        else []
    )
    now = timezone.now()
    uses = usage_selectors.use_summaries(fact for fact, _ in rows)
    # The words the assistant had in a fact's last chat, when they were not today's: one more
    # query, only when some fact changed since its last use (from the history snapshots).
    earlier = {
        fact.pk: (key_digest(subject_id, fact.key), use.last_version)
        for fact, _ in rows
        if (use := uses.get(fact.pk)) and use.last_version and use.last_version != fact.version
    }
    had = usage_selectors.versions_had(subject_id, earlier.values())
    by_category: dict[str, list[FactCard]] = {}
    for fact, source in rows:
        by_category.setdefault(fact.category, []).append(
            FactCard(
                fact=fact,
                source=source_sentence(fact, source),
                why=why_sentence(fact),
                used=used_sentence(
                    uses.get(fact.pk),
                    had.get(earlier[fact.pk]) if fact.pk in earlier else None,
                ),
                topic=topic_label(fact.key),
                pending=fact.status == FactStatus.PENDING_REVIEW,
                paused=paused_use,
                expired=fact.expires_at is not None and fact.expires_at <= now,
                short=Truncator(fact.value).chars(60),
                restricted=fact.restricted_at is not None,
            )
        )
    groups: list[Group] = []
    links: list[GroupLink] = []
    start = 0  # where the group's first fact is in the whole list
    for category, title, intro in GROUPS:
        count = overview.by_category.get(category, 0)
        # An empty group shows where it would start: on the page the group before it ends.
        first_page = start // FACTS_PER_PAGE + 1 if count else max(1, -(-start // FACTS_PER_PAGE))
        first_page = min(first_page, pages)
        cards = by_category.get(category, [])
        if cards:  # an empty group is not shown: the sentence at the top says what there is
            groups.append(
                Group(
                    category,
                    title,
                    intro,
                    cards,
                    count,
                    first_page,
                    continued=bool(cards) and start < offset,
                )
            )
        if count:
            links.append(GroupLink(category, title, count, first_page))
        start += count
    return {
        "groups": groups,
        "group_links": links if pages > 1 else [],
        "fact_count": overview.total,
        "page_number": number,
        "from_page": f"?page={number}" if number > 1 else "",  # edit and delete come back here
        "page_count": pages,
        "page_links": page_links(number, pages) if pages > 1 else [],
        "first_shown": offset + 1,
        "last_shown": offset + len(rows),
        "learning_paused": bool(subject and subject.memory_paused),
        "use_paused": paused_use,
        "memory_enabled": fact_selectors.memory_settings().memory_enabled,
    }
