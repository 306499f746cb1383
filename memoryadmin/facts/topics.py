"""The airline's catalogue of fact keys: one place for what each key means and how people read it.

The extraction prompt lists these keys (`key_lines`), SKILL.md carries them as a table
(`manage.py skill_topics` writes it), and the portal and the staff pages head a fact with its
label ("Seat preference" / 「座位偏好」) instead of its key. Both languages are written here,
not in the gettext catalogs, because SKILL.md needs both side by side. A key that is not in the
catalogue is made readable ("window_seat_notes" -> "Window seat notes"); a key that is not
English words (a Chinese key the agent chose) is shown as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import get_language

from .choices import Category


@dataclass(frozen=True)
class Topic:
    key: str
    en: str
    zh_hant: str
    category: Category
    use_when: str  # one line: when the agent should save under this key
    health: bool = False  # special category: saved only if the traveller asks for it
    aliases: tuple[str, ...] = ()  # other keys seen in the wild that read the same

    def label(self, language: str | None = None) -> str:
        """The label in `language` (the active one when None): Chinese for any zh-Hant."""
        language = (language or get_language() or "en").lower()
        return self.zh_hant if language.startswith("zh") else self.en


CATALOGUE: tuple[Topic, ...] = (
    Topic(
        "seat_preference",
        "Seat preference",
        "座位偏好",
        Category.PREFERENCE,
        "aisle or window, exit row, where in the cabin they like to sit",
    ),
    Topic(
        "meal_preference",
        "Meal preference",
        "餐點偏好",
        Category.PREFERENCE,
        "meals they choose for reasons that are not medical (vegetarian, no spicy food)",
    ),
    Topic(
        "cabin_preference",
        "Cabin preference",
        "艙等偏好",
        Category.PREFERENCE,
        "the cabin they usually book or want (economy, premium economy, business)",
    ),
    Topic(
        "overnight_flights",
        "Overnight flights",
        "紅眼班機",
        Category.CONSTRAINT,
        "whether they avoid or accept overnight (red-eye) flights",
        aliases=("overnight_flight",),
    ),
    Topic(
        "min_connection_time",
        "Connection time",
        "轉機時間",
        Category.CONSTRAINT,
        "the shortest connection they will accept",
    ),
    Topic(
        "connection_limit",
        "Connections",
        "轉機",
        Category.CONSTRAINT,
        "how many connections they accept, or a limit on layover length",
    ),
    Topic(
        "home_airport",
        "Home airport",
        "常用機場",
        Category.PREFERENCE,
        "the airport they usually depart from",
    ),
    Topic(
        "travel_party",
        "Who you travel with",
        "同行旅伴",
        Category.CONTEXT,
        "who they usually travel with (spouse, children, colleagues)",
    ),
    Topic(
        "frequent_route",
        "Routes you fly often",
        "常飛航線",
        Category.CONTEXT,
        "routes or trips they make again and again",
        aliases=("frequent_routes", "regular_trips"),
    ),
    Topic(
        "baggage_habit",
        "Baggage",
        "行李",
        Category.PREFERENCE,
        "carry-on only, always checks a bag, travels with sports equipment",
    ),
    Topic(
        "pet_travel",
        "Travelling with a pet",
        "攜帶寵物",
        Category.CONTEXT,
        "a pet that usually travels with them",
    ),
    Topic(
        "nickname",
        "What to call you",
        "稱呼",
        Category.PREFERENCE,
        "the name or form of address they asked to be called by",
    ),
    Topic(
        "mobility_assistance",
        "Mobility assistance",
        "行動協助",
        Category.CONSTRAINT,
        "help they need getting to and onto the aircraft (a wheelchair, extra time)",
        health=True,
    ),
    Topic(
        "hearing",
        "Hearing",
        "聽力",
        Category.CONTEXT,
        "hearing needs that change how the crew should reach them",
        health=True,
    ),
    Topic(
        "pregnancy",
        "Pregnancy",
        "懷孕",
        Category.CONTEXT,
        "a pregnancy that affects which flights suit them",
        health=True,
    ),
    Topic(
        "health_note",
        "Health",
        "健康",
        Category.CONTEXT,
        "any other health detail that matters for flying",
        health=True,
    ),
)

HEALTH_CONDITION = "only if the traveller asks to have it remembered"

_BY_KEY: dict[str, Topic] = {
    name: topic for topic in CATALOGUE for name in (topic.key, *topic.aliases)
}


def topic_for(key: str) -> Topic | None:
    """The catalogue's entry for a key or one of its aliases; None for any other key."""
    return _BY_KEY.get(key)


def keys_for_word(word: str) -> set[str]:
    """The catalogue's keys (and aliases) whose label in either language contains `word`, so a
    search by topic ("seat", 「座位」) finds facts stored under any spelling of the key."""
    word = word.casefold()
    return {
        name
        for topic in CATALOGUE
        if word in topic.en.casefold() or word in topic.zh_hant
        for name in (topic.key, *topic.aliases)
    }


def topic_label(key: str) -> str:
    """The key as people read it, in the active language."""
    known = _BY_KEY.get(key)
    if known is not None:
        return known.label()
    words = " ".join(part for part in key.replace("-", "_").replace(".", "_").split("_") if part)
    if not words:
        return key
    return words[:1].upper() + words[1:]


def key_lines() -> str:
    """The catalogue as the extraction prompt lists it, one key a line."""
    lines = []
    for topic in CATALOGUE:
        when = topic.use_when + (f"; {HEALTH_CONDITION}" if topic.health else "")
        lines.append(f"  - {topic.key} ({topic.category.value}): {when}")
    return "\n".join(lines)


def skill_table() -> str:
    """The catalogue as SKILL.md's Markdown table, both languages written out."""
    rows = [
        "| key | topic | 主題 | category | use it for |",
        "|---|---|---|---|---|",
    ]
    for topic in CATALOGUE:
        when = topic.use_when + (f"; {HEALTH_CONDITION}" if topic.health else "")
        rows.append(
            f"| `{topic.key}` | {topic.en} | {topic.zh_hant} | {topic.category.value} | {when} |"
        )
    return "\n".join(rows)
