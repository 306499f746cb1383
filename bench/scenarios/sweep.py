"""Scenario 4, the retention sweep over every fact of the preset. Destructive: run.py runs it
last."""

from __future__ import annotations

import time

from bench.harness import Context, Row
from bench.scenarios.raw import SWEEP_EVENTS_FLOOR


def scenario_sweep(ctx: Context, rows: list[Row]) -> None:
    """Every fact of the preset expired, then erased by the retention sweep (chunks of 1,000,
    one transaction each, redaction of their history included), against one raw DELETE of the
    same rows (run first, in a transaction rolled back). Destructive: it runs last."""
    try:
        from memoryadmin.facts.services import facts_sweep_expired
    except ImportError:
        print("scenario 4: no retention sweep (facts_sweep_expired) in this checkout")
        return
    import psycopg

    with psycopg.connect(ctx.conninfo, autocommit=True) as conn:
        conn.execute("UPDATE memory_fact SET expires_at = now() - interval '1 day'")
        conn.execute("VACUUM ANALYZE memory_fact")
        [(count,)] = conn.execute("SELECT count(*) FROM memory_fact").fetchall()
        with conn.transaction(force_rollback=True):
            start = time.perf_counter()
            conn.execute("DELETE FROM memory_fact WHERE expires_at <= now()")
            raw = time.perf_counter() - start
        # A floor for any sweep that keeps one audit event per erased fact: inserting those
        # events alone (hashed key, actor, reason, time), nothing deleted or redacted.
        with conn.transaction(force_rollback=True):
            start = time.perf_counter()
            conn.execute(SWEEP_EVENTS_FLOOR)
            floor = time.perf_counter() - start
    start = time.perf_counter()
    erased = 0
    while True:
        chunk = facts_sweep_expired(limit=1000)
        erased += chunk.done
        if not chunk.more:
            break
    swept = time.perf_counter() - start
    base = Row("4 sweep", f"raw DELETE of {count:,} expired facts", [raw], throughput=count / raw)
    rows.append(base)
    rows.append(
        Row(
            "4 sweep",
            f"floor: INSERT of {count:,} erasure events alone",
            [floor],
            throughput=count / floor,
            baseline=base,
        )
    )
    rows.append(
        Row(
            "4 sweep",
            f"facts_sweep_expired: {erased:,} erased, redaction incl.",
            [swept],
            throughput=erased / swept,
            baseline=base,
            target="facts/s >= 20% of the raw DELETE (<= 5x)",
            limit=0.2,
        )
    )
