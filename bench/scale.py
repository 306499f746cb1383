"""The scale scenario (issue 31): load travellers, facts and their history server-side
(INSERT ... SELECT generate_series), then measure the agent's reads and writes at a tenth of the
data and at all of it, erasure, forget everything, retention of one month by drop against the
row-by-row sweep of the same rows, and disk per million facts.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/ma_scale python bench/scale.py --scale 0.1

`--scale 1` is the issue's size: 1,000,000 travellers, 10,000,000 facts (10 each) and
100,000,000 events (10 per fact) over the last twelve months; `--scale 0.1` a tenth of each.
The database must be migrated (`manage.py migrate`); the memory tables are emptied first. The
first tenth of the travellers is loaded, measured, then the rest, measured again: the ratio of
the two is the signal (the goal: at most 1.2 for p50 and p99). Prints a Markdown table. Each
load runs without the history's secondary indexes and the facts' trigram index: dropped before,
made again from their saved definitions after (before each measurement); each step is timed.

Test data on purpose written straight into the tables (no service, no audit), keyed hashes
computed by the server (pgcrypto's hmac with the key `facts.keyhash` derives from SECRET_KEY):
run with the SECRET_KEY of the app, or erasure would not find the events.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from memoryadmin.db import partitions  # noqa: E402
from memoryadmin.facts import selectors, services  # noqa: E402
from memoryadmin.facts.actors import Actor  # noqa: E402
from memoryadmin.facts.keyhash import _DIGEST_SALT  # noqa: E402
from memoryadmin.facts.models import MemorySettings  # noqa: E402

FULL_TRAVELLERS = 1_000_000
FACTS_EACH = 10
EVENTS_EACH = 10  # per fact
CHUNK = 50_000  # travellers per INSERT: ~500,000 facts, ~5,000,000 events
DAY = 86400

SQL_SUBJECTS = """
INSERT INTO memory_subject (subject_id, purge_generation, memory_paused, memory_use_paused,
                            legal_hold, created_at, updated_at)
SELECT 'S' || lpad(g::text, 8, '0'), 0, false, false, g %% 1000 = 0, now(), now()
FROM generate_series(%(lo)s, %(hi)s - 1) AS g
"""

SQL_FACTS = """
INSERT INTO memory_fact (subject_id, key, value, category, updated_at, source_session_id,
                         created_at, origin, status, sensitive, expires_at, expiry_pinned,
                         version, evidence, evidence_origin, changed_at)
SELECT 'S' || lpad(g::text, 8, '0'), 'topic_' || k,
       'Value ' || k || ' for traveller ' || g || ' prefers aisle seats',
       'preference', now() - make_interval(days => (g + k) %% 365), '',
       now() - make_interval(days => (g + k) %% 365), 'agent', 'active', false, NULL, false,
       %(events)s, '', '', now()
FROM generate_series(%(lo)s, %(hi)s - 1) AS g, generate_series(1, %(facts)s) AS k
"""

# Ten events per fact over the last year, each under the fact's keyed hash (computed once per
# fact), snapshots as the services write them.
SQL_EVENTS = """
INSERT INTO memory_fact_event (subject_id, key, key_hash, action, actor_kind, actor_label,
                               reason, before, after, session_tag, created_at, receipt)
SELECT f.s, f.key, f.h, CASE WHEN e = 1 THEN 'created' ELSE 'updated' END, 'agent', 'bench', '',
       CASE WHEN e = 1 THEN NULL ELSE jsonb_build_object('value', 'Old value ' || e) END,
       jsonb_build_object('value', 'Value ' || e, 'category', 'preference'), '',
       now() - make_interval(days => ((f.g * 7 + e * 31) %% 360), secs => e), ''
FROM (SELECT 'S' || lpad(g::text, 8, '0') AS s, g, 'topic_' || k AS key,
             '#' || left(encode(hmac(convert_to('S' || lpad(g::text, 8, '0'), 'UTF8')
                                     || '\\x00'::bytea || convert_to('topic_' || k, 'UTF8'),
                                     %(derived)s::bytea, 'sha256'), 'hex'), 40) AS h
      FROM generate_series(%(lo)s, %(hi)s - 1) AS g, generate_series(1, %(facts)s) AS k) AS f,
     generate_series(1, %(events)s) AS e
"""

# A month of history two years back, every thousandth traveller under legal hold: what
# retention by month drops. Mostly erased facts' events (key = its digest: no live fact keeps
# them); one row in a hundred is an event of a live fact (a plain key the traveller still has).
SQL_OLD_MONTH = """
INSERT INTO memory_fact_event (subject_id, key, key_hash, action, actor_kind, actor_label,
                               reason, before, after, session_tag, created_at, receipt)
SELECT 'S' || lpad((n %% %(travellers)s)::text, 8, '0'),
       CASE WHEN n %% 100 = 7 THEN 'topic_' || (n %% %(facts)s + 1)
            ELSE '#' || md5(n::text || 'x') END,
       '#' || md5(n::text || 'x'), 'updated', 'agent', 'bench', '', NULL,
       jsonb_build_object('redacted', true), '',
       %(month)s::timestamptz + make_interval(secs => (n %% (27 * 86400))), ''
FROM generate_series(1, %(rows)s) AS n
"""


def _exec(sql: str, params: dict | None = None) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def _one(sql: str, params: dict | None = None):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


def _timed(label: str, fn, log: list) -> float:
    start = time.perf_counter()
    fn()
    took = time.perf_counter() - start
    log.append((label, took))
    print(f"  {label}: {took:.1f} s", flush=True)
    return took


def load(lo: int, hi: int, derived: bytes, log: list) -> None:
    for start in range(lo, hi, CHUNK):
        end = min(start + CHUNK, hi)
        params = {"lo": start, "hi": end, "facts": FACTS_EACH, "events": EVENTS_EACH}
        _timed(f"subjects {start}-{end}", lambda p=params: _exec(SQL_SUBJECTS, p), log)
        _timed(f"facts {start}-{end}", lambda p=params: _exec(SQL_FACTS, p), log)
        _timed(
            f"events {start}-{end}",
            lambda p=params: _exec(SQL_EVENTS, {**p, "derived": derived}),
            log,
        )


# The history's secondary indexes (not its primary key) and the facts' trigram index: dropped
# before a load and made again after it from their saved definitions, one sort per partition
# instead of an index insert per row.
SQL_LOAD_INDEXES = """
SELECT indexname, indexdef FROM pg_indexes
WHERE schemaname = current_schema()
  AND ((tablename = 'memory_fact_event' AND indexname NOT IN (
          SELECT conname FROM pg_constraint WHERE conrelid = 'memory_fact_event'::regclass))
       OR indexname = 'memory_fact_value_trgm')
ORDER BY indexname
"""


def indexes_drop(log: list) -> list[tuple[str, str]]:
    """Drop the load's indexes; return their names and definitions, to make them again."""
    with connection.cursor() as cursor:
        cursor.execute(SQL_LOAD_INDEXES)
        saved = cursor.fetchall()
    for name, _ in saved:
        _timed(f"drop index {name}", lambda n=name: _exec(f'DROP INDEX "{n}"'), log)
    return saved


def indexes_make(saved: list[tuple[str, str]], log: list) -> None:
    """Make the dropped indexes again. A partitioned parent's definition reads `ON ONLY`: without
    it, CREATE INDEX also builds (and attaches) each partition's."""
    _exec("SET maintenance_work_mem = '2GB'")
    _exec("SET max_parallel_maintenance_workers = 2")
    for name, definition in saved:
        sql = definition.replace(" ON ONLY ", " ON ", 1)
        _timed(f"create index {name}", lambda q=sql: _exec(q), log)


def _percentiles(samples: list[float]) -> tuple[float, float]:
    samples = sorted(samples)
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    return statistics.median(samples) * 1000, p99 * 1000


def _word(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8))


def agent_ops(rng: random.Random) -> dict:
    """The agent's reads and writes, each a function of a traveller (bench/scale_compare.py
    runs the same)."""
    actor = Actor.system("bench")
    return {
        "tier one": lambda s: selectors.tier_one(s),
        "list": lambda s: selectors.facts_for_agent(s),
        "get": lambda s: selectors.fact_for_agent(s, "topic_3"),
        "search": lambda s: selectors.facts_search(s, "aisle"),
        "upsert (update)": lambda s: services.fact_upsert(
            subject_id=s,
            facts=[services.FactDraft("topic_2", f"Window seat {_word(rng)}")],
            actor=actor,
        ),
        "upsert (new)": lambda s: services.fact_upsert(
            subject_id=s,
            facts=[services.FactDraft(f"new_{_word(rng)}", "Vegetarian meal")],
            actor=actor,
        ),
    }


def measure(travellers: int, n: int, seed: int) -> dict[str, tuple[float, float]]:
    """p50 and p99 (ms) of the agent's reads and writes, on random travellers, in turns."""
    rng = random.Random(seed)
    ops = agent_ops(rng)
    times: dict[str, list[float]] = {name: [] for name in ops}
    for _ in range(n):
        for name, op in ops.items():
            subject = "S" + str(rng.randrange(1, travellers)).zfill(8)
            start = time.perf_counter()
            op(subject)
            times[name].append(time.perf_counter() - start)
    return {name: _percentiles(samples) for name, samples in times.items()}


def erasure_cases(derived: bytes) -> dict[str, float]:
    """A fact with 1,000 events erased; a traveller with 20 facts and 1,000 events forgotten."""
    out = {}
    for lo, facts, events in ((1, 1, 1000), (2, 20, 50)):
        _exec(SQL_SUBJECTS.replace("'S' ||", "'E' ||"), {"lo": lo, "hi": lo + 1})
        _exec(
            SQL_FACTS.replace("'S' ||", "'E' ||"),
            {"lo": lo, "hi": lo + 1, "facts": facts, "events": events},
        )
        _exec(
            SQL_EVENTS.replace("'S' ||", "'E' ||"),
            {"lo": lo, "hi": lo + 1, "facts": facts, "events": events, "derived": derived},
        )
    _exec("ANALYZE memory_fact_event")
    start = time.perf_counter()
    services.fact_delete(subject_id="E00000001", key="topic_1", actor=Actor.system("bench"))
    out["erase one fact with 1,000 events (fact_delete)"] = time.perf_counter() - start
    start = time.perf_counter()
    services.subject_forget(subject_id="E00000002", actor=Actor.customer("E00000002"))
    out["forget everything: 20 facts, 1,000 events (subject_forget)"] = time.perf_counter() - start
    return out


SQL_DROP_OLD_MONTH = 'DROP TABLE IF EXISTS "{part}"'
SQL_WAL_NOW = "SELECT pg_current_wal_insert_lsn()"
SQL_WAL_SINCE = "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)::bigint"


def retention_case(
    travellers: int, rows: int, rounds: int = 1, *, checkpoint: bool = True, vacuum: bool = True
) -> dict[str, float]:
    """Two identical old months per round; one dropped (`partitions.month_drop`), the other
    swept row by row by the app's own audit sweep (`events_sweep_old`, chunks of 10,000).
    Each round takes the next two months back. Before the drop, the upkeep's index of closed
    months (`partitions.closed_months_index`, which runs months ahead of a drop) is made and
    timed apart. Both months are vacuumed first (unless `vacuum` is false), as a two-year-old
    month is: else autovacuum, drawn by the four million fresh rows, is still at work on them
    when the drop comes, and the drop's DETACH waits `deadlock_timeout` (1 s) for it to be
    cancelled. Then a CHECKPOINT (unless `checkpoint` is false), so both months are on disk as
    a two-year-old month is in production (a checkpoint since its rows were written: the
    sweep's first change to each page writes the whole page to the WAL, with full_page_writes
    on), and no checkpoint from the load falls by chance into one of the two timings. Returns
    the medians, and each round's ratio."""
    spec = next(s for s in partitions.registered() if s.table == "memory_fact_event")
    now = datetime.now(UTC)
    MemorySettings.objects.update_or_create(pk=1, defaults={"audit_retention_days": 400})
    drops, sweeps, ratios, indexes = [], [], [], []
    out: dict[str, float] = {}
    for n in range(rounds):
        first = partitions.add_months(partitions.month_of(now), -25 - 2 * n)
        second = partitions.add_months(first, 1)
        for month in (first, second):
            # A month an earlier run left (its kept rows, the swept one's dead rows) goes
            # first: each round's two months are made fresh, alike.
            _exec(SQL_DROP_OLD_MONTH.format(part=partitions.part_name(spec.table, month)))
            partitions.month_create(spec, month)
            params = {"travellers": travellers, "month": month, "rows": rows, "facts": FACTS_EACH}
            _exec(SQL_OLD_MONTH, params)
        _exec("ANALYZE memory_fact_event")
        if vacuum:
            for month in (first, second):
                _exec(f'VACUUM "{partitions.part_name(spec.table, month)}"')
        start = time.perf_counter()  # the upkeep's part, months before the drop: not the drop
        indexed = partitions.closed_months_index()
        indexes.append(time.perf_counter() - start)
        if checkpoint:
            _exec("CHECKPOINT")
        lsn = _one(SQL_WAL_NOW)
        start = time.perf_counter()
        kept, dropped = partitions.month_drop(spec, first)
        drops.append(time.perf_counter() - start)
        drop_wal = _one(SQL_WAL_SINCE, [lsn])
        lsn = _one(SQL_WAL_NOW)
        out["drop rows"], out["drop kept"] = dropped, kept
        start = time.perf_counter()
        deleted = 0
        while True:
            result = services.events_sweep_old(limit=10_000)  # one transaction a chunk
            deleted += result.done
            if not result.more:
                break
        sweeps.append(time.perf_counter() - start)
        sweep_wal = _one(SQL_WAL_SINCE, [lsn])
        out["row rows"] = deleted
        ratios.append(sweeps[-1] / drops[-1])
        print(
            f"  round {n + 1}: keep indexes ({len(indexed)} made)"
            f" {indexes[-1] * 1000:.0f} ms; drop {drops[-1] * 1000:.1f} ms (kept {kept:,}),"
            " row by row"
            f" {sweeps[-1] * 1000:.0f} ms ({deleted:,} rows): {ratios[-1]:.0f}x;"
            f" WAL {drop_wal / 2**20:.1f} MiB against {sweep_wal / 2**20:.0f} MiB",
            flush=True,
        )
    out["drop"] = statistics.median(drops)
    out["row by row"] = statistics.median(sweeps)
    out["ratios"] = ratios
    out["index"] = statistics.median(indexes)
    return out


def disk() -> dict[str, int]:
    sizes = {}
    for table in ("memory_subject", "memory_fact", "memory_fact_event"):
        sizes[table] = _one(
            "SELECT pg_total_relation_size(%s::regclass) + coalesce((SELECT"
            " sum(pg_total_relation_size(relid)) FROM pg_partition_tree(%s::regclass)), 0)",
            [table, table],
        )
        sizes[table + " rows"] = _one(f"SELECT count(*) FROM {table}")  # noqa: S608
    return sizes


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--n", type=int, default=300, help="calls per operation per phase")
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument(
        "--only",
        choices=["retention", "measure"],
        help="on a loaded database: only the retention case, or only the reads and writes"
        " (p50/p99 on the travellers 1..--travellers)",
    )
    parser.add_argument("--travellers", type=int, default=0)
    parser.add_argument(
        "--rounds", type=int, default=1, help="retention: rounds of drop against row by row"
    )
    parser.add_argument(
        "--no-vacuum",
        action="store_true",
        help="retention: the two fresh months not vacuumed before the timings",
    )
    parser.add_argument(
        "--no-checkpoint",
        action="store_true",
        help="retention: no CHECKPOINT between making the two months and timing them",
    )
    args = parser.parse_args()
    travellers = max(1000, int(FULL_TRAVELLERS * args.scale))
    tenth = travellers // 10
    derived = hashlib.sha256((_DIGEST_SALT + settings.SECRET_KEY).encode()).digest()
    log: list[tuple[str, float]] = []
    began = time.perf_counter()
    print(f"scale {args.scale}: {travellers:,} travellers", flush=True)
    call_command("migrate", verbosity=0)
    _exec("CREATE EXTENSION IF NOT EXISTS pgcrypto")
    if args.only == "retention":
        out = retention_case(
            travellers,
            rows=max(10_000, int(100_000_000 * args.scale / 24)),
            rounds=args.rounds,
            checkpoint=not args.no_checkpoint,
            vacuum=not args.no_vacuum,
        )
        print(
            f"median of {args.rounds}: drop {out['drop'] * 1000:.1f} ms, row by row"
            f" {out['row by row'] * 1000:.0f} ms: {out['row by row'] / out['drop']:.0f}x"
            f" (each round: {', '.join(f'{r:.0f}x' for r in out['ratios'])})"
        )
        return 0
    if args.only == "measure":
        measure(args.travellers, max(10, args.n // 10), seed=3)
        for name, (p50, p99) in measure(args.travellers, args.n, seed=4).items():
            print(f"{name}: p50 {p50:.3f} ms, p99 {p99:.3f} ms")
        return 0
    partitions.partitions_upkeep()
    for month in range(13):  # the year of history the events span
        spec = next(s for s in partitions.registered() if s.table == "memory_fact_event")
        partitions.month_create(
            spec, partitions.add_months(partitions.month_of(datetime.now(UTC)), -month)
        )
    if not args.skip_load:
        _exec(
            "TRUNCATE memory_fact, memory_fact_event, memory_use, memory_subject"
            " RESTART IDENTITY CASCADE"
        )
        saved = indexes_drop(log)
        load(1, tenth + 1, derived, log)
        indexes_make(saved, log)
        _timed("analyze", lambda: _exec("ANALYZE"), log)
    load_a = sum(t for _, t in log)
    measure(tenth, max(10, args.n // 10), seed=3)  # warm the caches, the processes' too
    small = measure(tenth, args.n, seed=1)
    if not args.skip_load:
        saved = indexes_drop(log)
        load(tenth + 1, travellers + 1, derived, log)
        indexes_make(saved, log)
        _timed("analyze", lambda: _exec("ANALYZE"), log)
    load_total = sum(t for _, t in log)
    large = measure(travellers, args.n, seed=2)
    sizes = disk()
    erasing = erasure_cases(derived)
    retention = retention_case(
        travellers,
        rows=max(10_000, int(100_000_000 * args.scale / 24)),
        rounds=args.rounds,
        checkpoint=not args.no_checkpoint,
        vacuum=not args.no_vacuum,
    )
    total = time.perf_counter() - began

    facts = sizes["memory_fact rows"]
    events = sizes["memory_fact_event rows"]
    print()
    print(f"## Scale scenario, --scale {args.scale} ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)")
    print()
    print(
        f"Loaded {sizes['memory_subject rows']:,} travellers, {facts:,} facts, {events:,} events"
        f" in {load_total:.0f} s (first tenth {load_a:.0f} s); whole run {total:.0f} s."
    )
    print()
    print(
        f"| operation | p50 at {facts // 10:,} facts (ms) | p99 | p50 at {facts:,} facts (ms)"
        " | p99 | ratio p50 | ratio p99 |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in small:
        (a50, a99), (b50, b99) = small[name], large[name]
        print(
            f"| {name} | {a50:.2f} | {a99:.2f} | {b50:.2f} | {b99:.2f} | {b50 / a50:.2f}x"
            f" | {b99 / a99:.2f}x |"
        )
    print()
    print("| case | time |")
    print("|---|---|")
    for name, took in erasing.items():
        print(f"| {name} | {took * 1000:.0f} ms |")
    print(
        f"| retention of one month by drop ({retention['drop rows']:,} rows dropped,"
        f" {retention['drop kept']:,} kept) | {retention['drop'] * 1000:.0f} ms |"
    )
    print(
        f"| the same month's rows by the row-by-row sweep ({retention['row rows']:,} rows)"
        f" | {retention['row by row'] * 1000:.0f} ms |"
    )
    print(f"| drop vs row by row | {retention['row by row'] / retention['drop']:.0f}x faster |")
    print(
        "| the upkeep's keep index of the closed months (ahead of the drop)"
        f" | {retention['index'] * 1000:.0f} ms |"
    )
    print()
    per_million = sizes["memory_fact"] + sizes["memory_fact_event"] + sizes["memory_subject"]
    print("| table | rows | bytes on disk (with indexes) | bytes per row |")
    print("|---|---|---|---|")
    for table in ("memory_subject", "memory_fact", "memory_fact_event"):
        rows = sizes[table + " rows"]
        print(f"| {table} | {rows:,} | {sizes[table]:,} | {sizes[table] / max(rows, 1):.0f} |")
    print(
        f"| disk per million facts with their history and travellers | | "
        f"{per_million / facts * 1_000_000 / 2**30:.2f} GiB | |"
    )
    print()
    print("Load steps (s): " + ", ".join(f"{name} {took:.1f}" for name, took in log))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
