"""Issue 33: the memory as of a date against the traveller page, for a traveller with 500 facts
and 10,000 events, in the same run (Django's test client, the whole middleware stack, an editor
signed in): p50 of each, the ratio (target <= 3x), and the statements of each page.

    DATABASE_URL=... SECRET_KEY=... python bench/as_of.py   # a migrated scratch database
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import Group, User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.utils import timezone  # noqa: E402

from memoryadmin.facts import services  # noqa: E402
from memoryadmin.facts.actors import Actor  # noqa: E402
from memoryadmin.facts.models import FactEvent  # noqa: E402
from memoryadmin.facts.services import FactDraft  # noqa: E402

SUBJECT = "bench-as-of-500"
FACTS, ROUNDS, RUNS = 500, 20, 30


def build() -> None:
    if FactEvent.objects.filter(subject_id=SUBJECT).count() >= FACTS * ROUNDS:
        return
    for round_ in range(ROUNDS):
        services.fact_upsert(
            subject_id=SUBJECT,
            actor=Actor.agent("bench"),
            facts=[FactDraft(f"fact_{n:03d}", f"value {n} round {round_}") for n in range(FACTS)],
        )


def measure(client: Client, path: str) -> tuple[float, int]:
    samples = []
    for index in range(RUNS + 3):
        start = time.perf_counter()
        response = client.get(path)
        took = time.perf_counter() - start
        assert response.status_code == 200, (path, response.status_code)
        if index >= 3:
            samples.append(took)
    with CaptureQueriesContext(connection) as queries:
        client.get(path)
    return statistics.median(samples), len(queries)


def main() -> None:
    build()
    events = FactEvent.objects.filter(subject_id=SUBJECT).count()
    user, _ = User.objects.get_or_create(username="bench-as-of-editor")
    user.groups.add(Group.objects.get_or_create(name="editor")[0])
    client = Client()
    client.force_login(user)
    at = timezone.localtime().strftime("%Y-%m-%dT%H:%M")
    pairs = []
    for _ in range(3):  # alternated rounds: drift hits both
        page = measure(client, f"/staff/travellers/{SUBJECT}/")
        as_of = measure(client, f"/staff/travellers/{SUBJECT}/as-of/?at={at}")
        pairs.append((page, as_of))
    page_p50 = statistics.median(p[0][0] for p in pairs)
    as_of_p50 = statistics.median(p[1][0] for p in pairs)
    print(f"traveller with {FACTS} facts and {events:,} events")
    print(f"traveller page  p50 {page_p50 * 1000:7.1f} ms  {pairs[-1][0][1]} statements")
    print(f"as of a date    p50 {as_of_p50 * 1000:7.1f} ms  {pairs[-1][1][1]} statements")
    print(f"ratio {as_of_p50 / page_p50:.2f}x (target <= 3x)")


if __name__ == "__main__":
    main()
