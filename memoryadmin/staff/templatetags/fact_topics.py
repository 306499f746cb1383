"""A fact as staff read it: its topic ("Seat preference") as the heading, the key beside it in
small code so support can still quote it, and who wrote the current value in words."""

from __future__ import annotations

from django import template
from django.utils.html import format_html

from memoryadmin.facts.models import ActorKind, MemoryFact
from memoryadmin.facts.topics import topic_label

from .staff_time import day

register = template.Library()


@register.simple_tag
def fact_topic(key: str, href: str = "") -> str:
    """The topic, linked when `href` is given, then the key in `<code class="fact-key">`; a key
    that reads as itself (a Chinese key) is shown once."""
    label = topic_label(key)
    heading = format_html('<a href="{}">{}</a>', href, label) if href else label
    if label == key:
        return format_html("{}", heading)
    return format_html('{} <code class="fact-key">{}</code>', heading, key)


@register.filter
def topic(key: str) -> str:
    """The topic alone, for text read aloud beside a control ("Mark Seat preference of ...")."""
    return topic_label(key)


@register.filter
def fact_origin(fact: MemoryFact) -> str:
    """Who wrote the current value: the person who rewrote it, else where the fact came from."""
    if fact.rewritten_by == ActorKind.STAFF:
        return f"Edited by {fact.rewritten_by_label or 'staff'} on {day(fact.updated_at)}"
    if fact.rewritten_by == ActorKind.CUSTOMER:
        return f"Corrected by the traveller on {day(fact.updated_at)}"
    return str(fact.get_origin_display())
