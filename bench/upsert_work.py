"""Where an upsert's work goes, counted rather than timed: each statement the agent's upsert
runs (`services.fact_upsert`: the lock, SQL_EXISTING, SQL_INSERT_FACTS / SQL_UPDATE_FACTS,
SQL_INSERT_EVENTS) under auto_explain with ANALYZE, BUFFERS and WAL, summed per statement over
`--n` upserts of each kind on random travellers of a database `bench/scale.py` loaded; and the
blocks each index and table was asked for (`pg_statio_user_indexes`/`_tables`, per partition).
Counts do not depend on what else the machine is doing, so two sizes compare on a shared one.

    SECRET_KEY=bench-scale-key DATABASE_URL=postgres://postgres@127.0.0.1:5499/ma_scale \
        .venv/bin/python bench/upsert_work.py --n 300 [--checkpoint]

Kinds: `update` (one held key, a new value: scale.py's "upsert (update)"), `new` (one key not
held: "upsert (new)"), `three` (two held keys changed and one new, as the peer bench's 3).
`--warm N` upserts of each kind first, not counted. `--checkpoint`: a CHECKPOINT before the
counted upserts, so the first change of each page writes its full image (as after any
checkpoint in production). Run it with autovacuum off on a server of its own, or the
statistics count autovacuum's reads too.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import string
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from memoryadmin.facts import services  # noqa: E402
from memoryadmin.facts.actors import Actor  # noqa: E402

AUTO_EXPLAIN = [
    "LOAD 'auto_explain'",
    "SET auto_explain.log_min_duration = 0",
    "SET auto_explain.log_analyze = on",
    "SET auto_explain.log_buffers = on",
    "SET auto_explain.log_wal = on",
    "SET auto_explain.log_timing = off",
    "SET auto_explain.log_triggers = on",
    "SET auto_explain.log_nested_statements = on",
    "SET auto_explain.log_format = 'json'",
    "SET auto_explain.log_level = 'notice'",
    "SET client_min_messages = 'notice'",
]
COUNTERS = (
    "Shared Hit Blocks",
    "Shared Read Blocks",
    "Shared Dirtied Blocks",
    "Shared Written Blocks",
    "WAL Records",
    "WAL FPI",
    "WAL Bytes",
    "I/O Read Time",  # ms, with track_io_timing on (0 otherwise)
)
SQL_STATIO = """
SELECT 'index ' || relname || '.' || indexrelname, idx_blks_hit, idx_blks_read
  FROM pg_statio_user_indexes
 WHERE relname LIKE 'memory_fact%%' OR relname = 'memory_subject'
UNION ALL
SELECT 'heap ' || relname, heap_blks_hit, heap_blks_read
  FROM pg_statio_user_tables
 WHERE relname LIKE 'memory_fact%%' OR relname = 'memory_subject'
"""
SQL_WAL = "SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal"


def _statement(text: str) -> str:
    """A short name for a statement of the upsert, from its text."""
    flat = " ".join(text.split())
    for prefix, name in (
        ("SELECT memory_paused", "lock (SQL_LOCK_SUBJECT)"),
        ("SELECT id, key, value", "read (SQL_EXISTING)"),
        ("INSERT INTO memory_fact_event", "events (SQL_INSERT_EVENTS)"),
        ("INSERT INTO memory_fact ", "insert (SQL_INSERT_FACTS)"),
        ("UPDATE memory_fact", "update (SQL_UPDATE_FACTS)"),
        ("SELECT 1 FROM ONLY", "foreign key check at COMMIT"),
    ):
        if flat.startswith(prefix):
            return name
    return flat[:40]


def _nodes(plan: dict) -> list[str]:
    """Each node of a plan, with its relation and index, depth first."""
    here = plan["Node Type"]
    for field in ("Index Name", "Relation Name"):
        if field in plan:
            here += f" {plan[field]}"
            break
    out = [here]
    for child in plan.get("Plans", []):
        out += _nodes(child)
    return out


def _letters(n: int) -> str:
    """n written in letters (a, b, ..., ba, bb, ...)."""
    out = ""
    while True:
        n, digit = divmod(n, 26)
        out = string.ascii_lowercase[digit] + out
        if not n:
            return out


def _snapshot(cursor) -> dict[str, tuple[int, int]]:
    cursor.execute("SELECT pg_stat_clear_snapshot()")
    cursor.execute(SQL_STATIO)
    return {name: (hit or 0, read or 0) for name, hit, read in cursor.fetchall()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300, help="counted upserts of each kind")
    parser.add_argument("--warm", type=int, default=50, help="upserts of each kind first")
    parser.add_argument("--checkpoint", action="store_true")
    parser.add_argument("--kinds", default="update,new,three", help="which kinds, in order")
    args = parser.parse_args()
    actor = Actor.system("bench")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memory_subject WHERE subject_id LIKE 'S%%'")
        travellers = cursor.fetchone()[0]
    rng = random.Random()  # other travellers each run: a repeated run would find them warm
    # Values of this run only (a value already held is a no-op), in letters: digits can read
    # as a card or phone number to the write filter, which refuses the fact.
    run = "".join(rng.choice(string.ascii_lowercase) for _ in range(6))
    word = (f"{run} {_letters(n)}" for n in range(10**9))

    def draft(key: str, value: str) -> services.FactDraft:
        return services.FactDraft(key, value)

    kinds = {
        "update": lambda: [draft("topic_2", f"Window seat {next(word)}")],
        "new": lambda: [draft(f"new_{next(word).replace(' ', '_')}", "Vegetarian meal")],
        "three": lambda: [
            draft("topic_4", f"Aisle seat {next(word)}"),
            draft("topic_5", f"Lounge access {next(word)}"),
            draft(f"added_{next(word).replace(' ', '_')}", "Travels with a child"),
        ],
    }

    kinds = {kind: kinds[kind] for kind in args.kinds.split(",")}

    def upsert(kind: str) -> None:
        subject = "S" + str(rng.randrange(1, travellers + 1)).zfill(8)
        services.fact_upsert(subject_id=subject, facts=kinds[kind](), actor=actor)

    for _ in range(args.warm):
        for kind in kinds:
            upsert(kind)
    connection.ensure_connection()
    raw = connection.connection
    plans: list[dict] = []

    def keep(diag) -> None:
        text = diag.message_primary or ""
        start = text.find("{")
        if "plan:" in text and start >= 0:
            plans.append(json.loads(text[start:]))

    with connection.cursor() as cursor:
        if args.checkpoint:
            cursor.execute("CHECKPOINT")
        cursor.execute(SQL_WAL)
        wal_before = cursor.fetchone()
        statio_before = _snapshot(cursor)
        for sql in AUTO_EXPLAIN:
            cursor.execute(sql)
    raw.add_notice_handler(keep)
    sums: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    shapes: dict[tuple[str, str], set[str]] = defaultdict(set)
    for kind in kinds:
        for _ in range(args.n):
            plans.clear()
            upsert(kind)
            for explained in plans:
                name = _statement(explained["Query Text"])
                plan = explained["Plan"]
                row = sums[(kind, name)]
                row["calls"] += 1
                for counter in COUNTERS:
                    row[counter] += plan.get(counter, 0)
                shapes[(kind, name)].add(" > ".join(_nodes(plan)))
    raw.remove_notice_handler(keep)
    with connection.cursor() as cursor:
        cursor.execute("RESET ALL")
        cursor.execute("SELECT pg_stat_force_next_flush()")
    time.sleep(1.5)
    with connection.cursor() as cursor:
        cursor.execute(SQL_WAL)
        wal_after = cursor.fetchone()
        statio_after = _snapshot(cursor)
    total = args.n * len(kinds)
    print(f"{travellers:,} travellers; {args.n} counted upserts of each kind (after {args.warm})")
    print()
    print("per statement, mean per upsert of that kind:")
    print(
        "| kind | statement | calls | hit | read | dirtied | written | WAL rec | FPI | WAL bytes"
        " | read ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (kind, name), row in sums.items():
        per = row["calls"] / args.n
        cells = " | ".join(f"{row[c] / args.n:.3f}" for c in COUNTERS)
        print(f"| {kind} | {name} | {per:.2f} | {cells} |")
    print()
    print("plans:")
    for (kind, name), seen in shapes.items():
        for shape in sorted(seen):
            print(f"  {kind} / {name}: {shape}")
    print()
    records, fpi, wal = (a - b for a, b in zip(wal_after, wal_before, strict=True))
    print(
        f"WAL of the whole server over the {total} counted upserts (commits included): "
        f"{records / total:.1f} records, {fpi / total:.2f} full pages, {wal / total:.0f} bytes"
        " per upsert"
    )
    print()
    print(f"blocks asked of each relation, per upsert (all {total}; hit + read = touched):")
    print("| relation | hit | read |")
    print("|---|---|---|")
    for name in sorted(statio_after):
        hit = statio_after[name][0] - statio_before.get(name, (0, 0))[0]
        read = statio_after[name][1] - statio_before.get(name, (0, 0))[1]
        if hit or read:
            print(f"| {name} | {hit / total:.2f} | {read / total:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
