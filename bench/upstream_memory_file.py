"""Write a memory file in upstream's JsonFileMemoryStore form, for timing `import_memory`.

    python bench/upstream_memory_file.py --facts 100000 --output /tmp/upstream-100k.json
    (--layout v2, the default: what JsonFileMemoryStore writes today, {"version": 2, "facts":
    {subject: {key: fact}}, "purges": {subject: n}}; --layout lists: subject -> list of facts)
    time python manage.py import_memory /tmp/upstream-100k.json     # first run: writes all
    time python manage.py import_memory /tmp/upstream-100k.json     # second run: changes nothing

Ten facts per traveller, English and Traditional Chinese values, every category, a few phone
numbers (blocked by the write filter) and a few health facts (held for review), so the import
does the same work a real file would ask of it.
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

TOPICS = [
    (
        "seat_preference",
        "preference",
        ["Prefers aisle seats", "Prefers window seats", "偏好靠走道座位", "Likes exit row seats"],
    ),
    ("overnight_flights", "constraint", ["Avoids overnight flights", "不搭紅眼班機"]),
    (
        "travel_party",
        "context",
        ["Usually travels with spouse", "常和家人一起旅行", "Travels with two children"],
    ),
    ("meal_preference", "preference", ["Vegetarian meals by choice", "No spicy food"]),
    ("home_airport", "context", ["Flies from Taoyuan (TPE)", "Flies from Heathrow"]),
    ("connection_limit", "constraint", ["At most one connection", "Layovers under 3 hours"]),
    ("baggage", "preference", ["Travels with carry-on only", "Always checks one bag"]),
    ("cabin", "preference", ["Upgrades to premium economy on long flights"]),
    ("frequent_route", "context", ["Flies TPE-NRT most months", "Flies LHR-JFK often"]),
    ("contact", "context", ["Call me on +1 (415) 555-0134", "電話 0912 345 678"]),
    ("health", "constraint", ["Needs insulin on board", "Asthma, carries an inhaler"]),
]


def build(facts: int, seed: int = 7) -> dict[str, list[dict[str, object]]]:
    rng = random.Random(seed)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    document: dict[str, list[dict[str, object]]] = {}
    for index in range(facts):
        subject = f"FF-{index // 10:07d}"
        key, category, values = (
            TOPICS[rng.randrange(len(TOPICS) - 2)]
            if rng.random() < 0.98
            else TOPICS[rng.choice([-1, -2])]
        )
        entries = document.setdefault(subject, [])
        if any(entry["key"] == key for entry in entries):
            key = f"{key}_{index % 10}"
        entries.append(
            {
                "key": key,
                "value": rng.choice(values),
                "category": category,
                "updated_at": (start + timedelta(minutes=rng.randrange(500_000))).isoformat(),
                "source_session_id": f"{rng.getrandbits(48):012x}",
            }
        )
    return document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--output", type=Path, default=Path("/tmp/upstream-memory.json"))
    parser.add_argument("--layout", choices=["v2", "lists"], default="v2")
    args = parser.parse_args()
    document = build(args.facts)
    count = sum(map(len, document.values()))
    written: object = document if args.layout == "lists" else version_2(document)
    args.output.write_text(json.dumps(written, ensure_ascii=False), encoding="utf-8")
    print(f"{args.output}: {count:,} facts, {len(document):,} travellers ({args.layout})")


def version_2(document: dict[str, list[dict[str, object]]]) -> dict[str, object]:
    """Upstream's version-2 layout: facts keyed by key, and a purge counter for every tenth
    traveller (the import skips and names them)."""
    return {
        "version": 2,
        "facts": {
            subject: {str(fact["key"]): fact for fact in facts}
            for subject, facts in document.items()
        },
        "purges": {subject: 1 + n % 3 for n, subject in enumerate(document) if n % 10 == 0},
    }


if __name__ == "__main__":
    main()
