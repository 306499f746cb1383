"""Read- and write-path cost of the system of record, as ratios against raw SQL in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memoryadmin python bench/store_bench.py

Creates a throwaway test database (test_<name>), loads --subjects travellers with --facts facts
each, then times each operation against a baseline doing the least possible work for the same
answer (one hand-written SELECT / UPDATE). Ratios matter, not absolute times: they stay
comparable across machines and between runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median seconds per call over `repeat` calls, after a warm-up call."""
    fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, default=2000)
    parser.add_argument("--facts", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()

    import django

    django.setup()
    from asgiref.sync import async_to_sync
    from django.db import connection
    from django.utils import timezone

    from memoryadmin.facts import selectors, services
    from memoryadmin.facts.actors import Actor
    from memoryadmin.facts.models import MemoryFact, Subject
    from memoryadmin.facts.store import DjangoMemoryStore

    if connection.vendor != "postgresql":
        print("store_bench needs PostgreSQL: set DATABASE_URL")
        return 0
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        now = timezone.now()
        categories = ["preference", "constraint", "context"]
        Subject.objects.bulk_create(
            [Subject(subject_id=f"S{n:06d}") for n in range(args.subjects)], batch_size=2000
        )
        # Bulk load straight into the table: this is test data for a benchmark, not a write path.
        rows = [
            MemoryFact(
                subject_id=f"S{n:06d}",
                key=f"topic_{k}",
                value=f"Fact number {k} for {n}",
                category=categories[k % 3],
                created_at=now,
                updated_at=now,
                origin="import",
            )
            for n in range(args.subjects)
            for k in range(args.facts)
        ]
        MemoryFact.objects.bulk_create(rows, batch_size=5000)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        subject = f"S{args.subjects // 2:06d}"
        store = DjangoMemoryStore()
        actor = Actor.agent("bench")

        def raw_select() -> list:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT key, value, category, updated_at, source_session_id FROM memory_fact "
                    "WHERE subject_id = %s AND status = 'active' "
                    "AND (expires_at IS NULL OR expires_at > now())",
                    [subject],
                )
                return cursor.fetchall()

        flip = {"n": 0}

        def raw_update() -> None:
            flip["n"] += 1
            with connection.cursor() as cursor:
                cursor.execute(
                    "UPDATE memory_fact SET value = %s, version = version + 1, updated_at = now() "
                    "WHERE subject_id = %s AND key = 'topic_0'",
                    [f"Raw value {flip['n']}", subject],
                )

        def upsert_change() -> None:
            flip["n"] += 1
            services.fact_upsert(
                subject_id=subject,
                actor=actor,
                facts=[services.FactDraft("topic_1", f"Changed value {flip['n']}")],
            )

        def upsert_same() -> None:
            services.fact_upsert(
                subject_id=subject,
                actor=actor,
                facts=[services.FactDraft("topic_2", "Fact number 2 for x")],
            )

        async def _many_get_facts(times: int) -> None:
            for _ in range(times):
                await store.get_facts(subject)

        def get_facts_in_loop() -> None:
            """One await inside a running loop, as an async agent host calls it."""
            async_to_sync(_many_get_facts)(1)

        read_base = timed(raw_select, args.repeat)
        write_base = timed(raw_update, args.repeat)
        cases = [
            ("facts_for_agent (selector)", lambda: selectors.facts_for_agent(subject), read_base),
            ("tier_one (selector)", lambda: selectors.tier_one(subject), read_base),
            (
                "facts_search (selector)",
                lambda: selectors.facts_search(subject, "number 3"),
                read_base,
            ),
            ("DjangoMemoryStore.get_facts (async)", lambda: get_facts_in_loop(), read_base),
            ("fact_upsert, new value (+event)", upsert_change, write_base),
            ("fact_upsert, same value (no-op)", upsert_same, write_base),
        ]
        total = args.subjects * args.facts
        print(
            f"{args.subjects} subjects x {args.facts} facts = {total} rows; median of {args.repeat}"
        )
        print(f"{'baseline raw SELECT':<36} {read_base * 1e3:8.3f} ms   1.00x")
        print(f"{'baseline raw UPDATE':<36} {write_base * 1e3:8.3f} ms   1.00x")
        for name, fn, base in cases:
            seconds = timed(fn, args.repeat)
            print(f"{name:<36} {seconds * 1e3:8.3f} ms {seconds / base:6.2f}x")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
