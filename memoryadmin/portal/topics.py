"""A fact's topic as a traveller reads it: "Seat preference" / 「座位偏好」, not its key.

The airline's usual keys (those SKILL.md and the extraction prompt give as examples, and the
demo's) have a label written by hand in both languages; any other key is made readable
("window_seat_notes" -> "Window seat notes"). A key that is not English words (a Chinese key
the agent chose) is shown as it is.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

TOPICS = {
    "seat_preference": _("Seat preference"),
    "meal_preference": _("Meal preference"),
    "cabin_preference": _("Cabin preference"),
    "overnight_flight": _("Overnight flights"),
    "overnight_flights": _("Overnight flights"),
    "travel_party": _("Who you travel with"),
    "home_airport": _("Home airport"),
    "connection_limit": _("Connections"),
    "mobility_assistance": _("Mobility assistance"),
    "health_note": _("Health"),
    "baggage_habit": _("Baggage"),
    "frequent_route": _("Routes you fly often"),
    "pregnancy": _("Pregnancy"),
    "hearing": _("Hearing"),
    "pet_travel": _("Travelling with a pet"),
    "nickname": _("What to call you"),
}


def topic_label(key: str) -> str:
    """The topic of a key in the current language."""
    known = TOPICS.get(key)
    if known is not None:
        return str(known)
    words = " ".join(part for part in key.replace("-", "_").replace(".", "_").split("_") if part)
    if not words:
        return key
    return words[:1].upper() + words[1:]
