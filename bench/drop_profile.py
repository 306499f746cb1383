"""Where a month's drop spends its time (issue 31): each statement of `partitions.month_drop`
(the same list, `partitions.drop_steps`) timed on its own, the copies of kept rows under
EXPLAIN (ANALYZE, BUFFERS, TIMING), the WAL each writes, and the end of the transaction:
ROLLBACK by default (DDL is transactional, so the same month can be profiled again), or
COMMIT with `--commit` (then the month is really dropped, and the commit's own cost, the
unlinking of the old month's files, is timed).

    DATABASE_URL=... SECRET_KEY=bench-scale-key python bench/drop_profile.py \\
        --make 2023-01 --travellers 1000000 --rows 4166666
    DATABASE_URL=... python bench/drop_profile.py --month 2023-01 [--commit] [--plain]

`--make` creates the month (two years back or more, so nothing else writes to it) and fills
it as `bench/scale.py`'s retention case does (SQL_OLD_MONTH), analyzes it and makes its keep
index (`partitions.closed_months_index`), then profiles it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from bench.scale import FACTS_EACH, SQL_OLD_MONTH, SQL_WAL_SINCE  # noqa: E402
from memoryadmin.db import partitions  # noqa: E402

SQL_WAL_NOW = "SELECT pg_current_wal_insert_lsn()"
SQL_SET_LOCAL = "SELECT set_config(%s, %s, true)"


def _run(cursor, statement: str, params=None) -> float:
    start = time.perf_counter()
    cursor.execute(statement, params)
    return (time.perf_counter() - start) * 1000


def _wal(cursor, since: str) -> int:
    cursor.execute(SQL_WAL_SINCE, [since])
    return int(cursor.fetchone()[0])


def profile(
    spec: partitions.Partitioned,
    month: datetime,
    *,
    commit: bool,
    plain: bool,
    settings: list[str] = (),
) -> None:
    """Run the drop's statements of one month in one transaction, each timed; `settings`
    (name=value) are set for the transaction after the drop's own, to try one."""
    rows: list[tuple[str, float, int, str]] = []
    with connection.cursor() as cursor:
        cursor.execute(SQL_WAL_NOW)
        began_lsn = cursor.fetchone()[0]
        began = time.perf_counter()
        _run(cursor, "BEGIN")
        for label, statement in (
            ("checks now", partitions.SQL_CHECKS_NOW),
            ("plan settings", partitions.SQL_INDEX_PLANS),
        ):
            rows.append((label, _run(cursor, statement), 0, ""))
        for setting in settings:
            name, _, value = setting.partition("=")
            rows.append((setting, _run(cursor, SQL_SET_LOCAL, [name, value]), 0, ""))
        for step in partitions.drop_steps(spec, month):
            cursor.execute(SQL_WAL_NOW)
            lsn = cursor.fetchone()[0]
            note = ""
            if step.keeps and not plain:
                explain = "EXPLAIN (ANALYZE, BUFFERS, TIMING) " + step.statement
                took = _run(cursor, explain, step.params)
                note = "\n".join(line for (line,) in cursor.fetchall())
            else:
                took = _run(cursor, step.statement, step.params)
                if step.keeps:
                    note = f"{cursor.rowcount:,} rows"
            rows.append((step.label, took, _wal(cursor, lsn), note))
        cursor.execute(SQL_WAL_NOW)
        lsn = cursor.fetchone()[0]
        end = "COMMIT" if commit else "ROLLBACK"
        rows.append((end, _run(cursor, end), _wal(cursor, lsn), ""))
        total = (time.perf_counter() - began) * 1000
        whole_wal = _wal(cursor, began_lsn)
    print(f"## {partitions.part_name(spec.table, month)} ({datetime.now(UTC):%H:%M:%S} UTC)")
    print()
    print("| statement | ms | WAL bytes |")
    print("|---|---|---|")
    for label, took, wal, _ in rows:
        print(f"| {label} | {took:.1f} | {wal:,} |")
    print(f"| whole (with the WAL probes) | {total:.1f} | {whole_wal:,} |")
    for label, _, _, note in rows:
        if note:
            print(f"\n{label}:\n{note}")


def make_month(spec: partitions.Partitioned, month: datetime, travellers: int, rows: int) -> None:
    """A fresh old month as the scale scenario's retention case makes it, analyzed, indexed."""
    partitions.month_create(spec, month)
    params = {"travellers": travellers, "month": month, "rows": rows, "facts": FACTS_EACH}
    with connection.cursor() as cursor:
        start = time.perf_counter()
        cursor.execute(SQL_OLD_MONTH, params)
        print(f"filled: {cursor.rowcount:,} rows, {time.perf_counter() - start:.1f} s")
        cursor.execute(f'ANALYZE "{partitions.part_name(spec.table, month)}"')
    print("keep indexes made:", partitions.closed_months_index())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--month", help="YYYY-MM, an existing month of the history")
    parser.add_argument("--make", help="YYYY-MM: create and fill this month first")
    parser.add_argument("--travellers", type=int, default=1_000_000)
    parser.add_argument("--rows", type=int, default=4_166_666)
    parser.add_argument("--commit", action="store_true", help="really drop the month")
    parser.add_argument("--plain", action="store_true", help="no EXPLAIN: the statements alone")
    parser.add_argument("--set", action="append", default=[], help="name=value, for a try")
    args = parser.parse_args()
    spec = next(s for s in partitions.registered() if s.table == "memory_fact_event")
    text = args.make or args.month
    month = datetime.strptime(text, "%Y-%m").replace(tzinfo=UTC)
    if args.make:
        make_month(spec, month, args.travellers, args.rows)
    profile(spec, month, commit=args.commit, plain=args.plain, settings=args.set)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
