"""Issue 30's figures, each case against its baseline in the same run, calls taking turns (in a
new random order every turn):

- the replica router: the agent's read (`selectors.facts_for_agent`) routed to a real streaming
  standby, its traveller's last write position read from Redis, against the same read with no
  replica configured (straight to the primary); and `replicas.subject_read_alias` alone;
- the pooler: the same read through pgbouncer in transaction mode (`DATABASE_POOLER=
  transaction`: Django's cursor, no prepared statement) against raw SQL (`SQL_FACTS` on a bare
  psycopg connection) through the same pgbouncer, and against raw SQL straight to the server.

It starts its own servers (tests/support/: a primary and a standby from Debian's PostgreSQL 15,
a redis-server, pgbouncer), run as root or as a user that may run them:

    SECRET_KEY=... [BENCH_ROUNDS=15] .venv/bin/python bench/replicas.py [--n 2000]

BENCH_PROFILE=<case name>: that case's calls under cProfile first (the top 25 by own time).
BENCH_ROUNDS (1): rounds of --n calls per case; each ratio is taken within a round, and the
table gives the median of the rounds' ratios and their range. The in-process store's read
(`DjangoMemoryStore.get_facts`, its native async path) is measured the same way, routed against
no replica configured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from random import Random
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
SUBJECT = "BENCH-REPLICA-1"


# How many scans of the facts table a server ran (on the standby: the routed reads reached it).
SQL_FACT_SCANS = """
SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables
 WHERE relname = 'memory_fact'
"""


def _measure(n: int) -> list[dict[str, dict[str, float]]]:
    """In the child: Django configured on the cluster (with its replica) or on pgbouncer."""
    import django

    django.setup()
    import psycopg
    from django.conf import settings

    from memoryadmin.db import replicas
    from memoryadmin.facts import selectors, services
    from memoryadmin.facts.actors import Actor
    from memoryadmin.facts.sql import SQL_FACTS

    services.fact_upsert(
        subject_id=SUBJECT,
        facts=[services.FactDraft(f"key{i}", f"value {i}", "preference") for i in range(20)],
        actor=Actor.agent("bench"),
    )
    time.sleep(1.0)  # the standby replays it; the router's next look sees that
    configured = settings.DATABASE_REPLICAS
    raw_urls = json.loads(os.environ["BENCH_RAW_URLS"])
    raw = {
        name: psycopg.connect(url, autocommit=True, prepare_threshold=None)
        for name, url in raw_urls.items()
    }
    from django.utils import timezone

    def read_direct() -> None:
        settings.DATABASE_REPLICAS = ()
        selectors.facts_for_agent(SUBJECT)
        settings.DATABASE_REPLICAS = configured

    def read_routed() -> None:
        selectors.facts_for_agent(SUBJECT)

    def decide() -> None:
        replicas.subject_read_alias(SUBJECT)

    def raw_read(name: str):
        conn = raw[name]

        def call() -> None:
            conn.execute(SQL_FACTS, {"subject": SUBJECT, "now": timezone.now()}).fetchall()

        return call

    import asyncio

    from memoryadmin.facts.store import DjangoMemoryStore

    loop = asyncio.new_event_loop()
    store = DjangoMemoryStore(native=True)

    def store_direct() -> None:
        settings.DATABASE_REPLICAS = ()
        loop.run_until_complete(store.get_facts(SUBJECT))
        settings.DATABASE_REPLICAS = configured

    def store_routed() -> None:
        loop.run_until_complete(store.get_facts(SUBJECT))

    from memoryadmin.db import positions, redis_watch

    watch = settings.DATABASE_REPLICA_POSITION_WATCH_SECONDS
    position_key = (positions.KEY_PREFIX + replicas.subject_key(SUBJECT),)

    def read_unknown() -> None:
        """The routed read of a traveller this process does not know yet (the watch's miss)."""
        redis_watch.forget(position_key)
        selectors.facts_for_agent(SUBJECT)

    def read_unwatched() -> None:
        settings.DATABASE_REPLICA_POSITION_WATCH_SECONDS = 0
        selectors.facts_for_agent(SUBJECT)
        settings.DATABASE_REPLICA_POSITION_WATCH_SECONDS = watch

    def store_unwatched() -> None:
        settings.DATABASE_REPLICA_POSITION_WATCH_SECONDS = 0
        loop.run_until_complete(store.get_facts(SUBJECT))
        settings.DATABASE_REPLICA_POSITION_WATCH_SECONDS = watch

    cases = {"django read": read_routed if configured else read_direct}
    if configured:
        cases["django read, no replica configured (primary)"] = read_direct
        cases["router decision alone"] = decide
        cases["django read, traveller not known yet"] = read_unknown
        cases["django read, no position watch (Redis asked)"] = read_unwatched
        cases["store read"] = store_routed
        cases["store read, no replica configured (primary)"] = store_direct
        cases["store read, no position watch (Redis asked)"] = store_unwatched
    for name in raw:
        cases[f"raw SQL {name}"] = raw_read(name)
    for _ in range(50):  # warm up: connections, plans, caches
        for call in cases.values():
            call()
    names = list(cases)
    shuffle = Random(30).shuffle  # noqa: S311 - an order, not a secret
    scans_before = raw["on the standby"].execute(SQL_FACT_SCANS).fetchone()[0] if configured else 0
    profiled = os.environ.get("BENCH_PROFILE")  # a case's name: its calls under cProfile
    if profiled:
        import cProfile
        import pstats

        profile = cProfile.Profile()
        profile.enable()
        for _ in range(n):
            cases[profiled]()
        profile.disable()
        pstats.Stats(profile, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    rounds: list[dict[str, dict[str, float]]] = []
    for _ in range(max(1, int(os.environ.get("BENCH_ROUNDS", "1")))):
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(n):
            # A new order every turn: a rotation keeps each case behind the same neighbour,
            # and a case measured after a Redis round trip was measured a third faster.
            shuffle(names)
            for name in names:
                started = time.perf_counter()
                cases[name]()
                times[name].append(time.perf_counter() - started)
        rounds.append(
            {
                name: {
                    "p50_us": median(values) * 1e6,
                    "p99_us": sorted(values)[int(len(values) * 0.99)] * 1e6,
                }
                for name, values in times.items()
            }
        )
    if configured:
        assert replicas.subject_read_alias(SUBJECT) != "default", "reads did not reach the replica"
        # ...and the routed reads were served there: the standby ran them (its own statistics,
        # which a session sends at most once a second).
        time.sleep(2.5)
        raw["on the standby"].execute("SELECT pg_stat_clear_snapshot()")
        scans = raw["on the standby"].execute(SQL_FACT_SCANS).fetchone()[0] - scans_before
        print(f"standby scans of memory_fact: {scans}", file=sys.stderr)
        assert scans >= n, f"the standby ran {scans} scans, fewer than one round's routed reads"
    loop.run_until_complete(store.aclose())
    return rounds


def _child(env: dict[str, str], n: int) -> list[dict[str, dict[str, float]]]:
    done = subprocess.run(  # noqa: S603 - fixed argv
        [sys.executable, __file__, "--child", "--n", str(n)],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "memoryadmin.settings", **env},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-4000:])
    if os.environ.get("BENCH_PROFILE"):
        print(done.stderr[-12000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def _table(title: str, rounds: list[dict[str, dict[str, float]]], baseline: str) -> None:
    """Each case's p50 and p99 (the median over rounds) and its ratio to the baseline's p50 in
    the same round: the median of the rounds' ratios, and their range."""
    print(f"\n{title} ({len(rounds)} round(s))")
    for name in rounds[0]:
        ratios = sorted(r[name]["p50_us"] / r[baseline]["p50_us"] for r in rounds)
        p50 = median(r[name]["p50_us"] for r in rounds)
        p99 = median(r[name]["p99_us"] for r in rounds)
        print(
            f"  {name:<48} p50 {p50:8.0f} us  p99 {p99:8.0f} us"
            f"  {median(ratios):5.2f}x  [{ratios[0]:.2f}-{ratios[-1]:.2f}]"
        )


def _pairs(rounds: list[dict[str, dict[str, float]]], case: str, baseline: str) -> None:
    ratios = sorted(r[case]["p50_us"] / r[baseline]["p50_us"] for r in rounds)
    spread = f"{ratios[0]:.2f}-{ratios[-1]:.2f}x"
    print(f"  {case} / {baseline}: median {median(ratios):.2f}x, rounds {spread}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=2000, help="calls per case per round")
    parser.add_argument("--child", action="store_true")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure(args.n)))
        return
    sys.path.insert(0, str(ROOT))
    from tests.support.pgbouncer import PgBouncer
    from tests.support.replication import DB_NAME, Cluster, Redis

    cluster = Cluster().start()
    redis = Redis(Path(tempfile.mkdtemp(prefix="ma-bench-redis-"))).start()
    redis.positions_started_long_ago()  # a fresh map sends every read to the primary a while
    bouncer = PgBouncer(server_host="127.0.0.1", server_port=cluster.primary.port).start()
    try:
        routed = _child(
            {
                "DATABASE_URL": cluster.primary.url,
                "DATABASE_REPLICA_URLS": cluster.standby.url,
                "CACHE_URL": redis.url,
                "CELERY_BROKER_URL": "",
                "BENCH_RAW_URLS": json.dumps(
                    {"on the primary": cluster.primary.url, "on the standby": cluster.standby.url}
                ),
            },
            args.n,
        )
        _table(
            "The agent's read through the replica router (to the standby) vs to the primary",
            routed,
            "django read, no replica configured (primary)",
        )
        store_base = "store read, no replica configured (primary)"
        for case in routed[0]:
            if case.startswith("store read") and case != store_base:
                _pairs(routed, case, store_base)
        pooled = _child(
            {
                "DATABASE_URL": bouncer.url(DB_NAME),
                "DATABASE_POOLER": "transaction",
                "CACHE_URL": redis.url,
                "CELERY_BROKER_URL": "",
                "BENCH_RAW_URLS": json.dumps(
                    {"through pgbouncer": bouncer.url(DB_NAME), "direct": cluster.primary.url}
                ),
            },
            args.n,
        )
        _table(
            "The agent's read through pgbouncer (transaction mode) vs raw SQL through it",
            pooled,
            "raw SQL through pgbouncer",
        )
    finally:
        bouncer.stop()
        redis.remove()
        cluster.stop()


if __name__ == "__main__":
    main()
