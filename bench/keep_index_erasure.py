"""What the closed months' keep indexes cost erasure (issue 31, docs/ARCHITECTURE.md
"Partitions and retention by month"): a fact with 1,000 events over the last year erased
(`fact_delete`) while every closed month of the history has its `<month>_keep` index (redacting
its rows is then no HOT update), then another such fact with those indexes dropped; in turns.

    SECRET_KEY=dev DATABASE_URL=.../ma_scale python bench/keep_index_erasure.py --rounds 3

On a database `bench/scale.py` loaded (its travellers' tables and key derivation); the upkeep
makes the indexes again at the end. Test data written straight into the tables, as scale.py's.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scale  # noqa: E402  (sets Django up)
from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402

from memoryadmin.db import partitions  # noqa: E402
from memoryadmin.facts import services  # noqa: E402
from memoryadmin.facts.actors import Actor  # noqa: E402
from memoryadmin.facts.keyhash import _DIGEST_SALT  # noqa: E402

SQL_KEEP_INDEXES = """
SELECT relname FROM pg_class WHERE relkind = 'i' AND relname LIKE 'memory_fact_event_y%_keep'
"""


def _keep_indexes() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(SQL_KEEP_INDEXES)
        return [row[0] for row in cursor.fetchall()]


def _erase_one(n: int, derived: bytes) -> float:
    params = {"lo": n, "hi": n + 1, "facts": 1, "events": 1000, "derived": derived}
    for statement in (scale.SQL_SUBJECTS, scale.SQL_FACTS, scale.SQL_EVENTS):
        scale._exec(statement.replace("'S' ||", "'K' ||"), params)
    start = time.perf_counter()
    services.fact_delete(subject_id=f"K{n:08d}", key="topic_1", actor=Actor.system("bench"))
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--first", type=int, default=1, help="first test traveller number")
    args = parser.parse_args()
    derived = hashlib.sha256((_DIGEST_SALT + settings.SECRET_KEY).encode()).digest()
    with_index, without = [], []
    for n in range(args.rounds):
        partitions.closed_months_index()
        indexes = _keep_indexes()
        with_index.append(_erase_one(args.first + 2 * n, derived))
        for name in indexes:
            scale._exec(f'DROP INDEX "{name}"')
        without.append(_erase_one(args.first + 2 * n + 1, derived))
        print(
            f"round {n + 1}: with {len(indexes)} keep indexes {with_index[-1] * 1000:.0f} ms,"
            f" without {without[-1] * 1000:.0f} ms",
            flush=True,
        )
    partitions.closed_months_index()
    print(
        f"median: with {statistics.median(with_index) * 1000:.0f} ms,"
        f" without {statistics.median(without) * 1000:.0f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
