"""Issue 30's figures, each case against its baseline in the same run, calls taking turns:

- the replica router: the agent's read (`selectors.facts_for_agent`) routed to a real streaming
  standby, its traveller's last write position read from Redis, against the same read with no
  replica configured (straight to the primary); and `replicas.subject_read_alias` alone;
- the pooler: the same read through pgbouncer in transaction mode (`DATABASE_POOLER=
  transaction`: Django's cursor, no prepared statement) against raw SQL (`SQL_FACTS` on a bare
  psycopg connection) through the same pgbouncer, and against raw SQL straight to the server.

It starts its own servers (tests/support/: a primary and a standby from Debian's PostgreSQL 15,
a redis-server, pgbouncer), run as root or as a user that may run them:

    SECRET_KEY=... .venv/bin/python bench/replicas.py [--n 2000]
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
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
SUBJECT = "BENCH-REPLICA-1"


def _measure(n: int) -> dict[str, dict[str, float]]:
    """In the child: Django configured on the cluster (with its replica) or on pgbouncer."""
    import django

    django.setup()
    import psycopg
    from django.conf import settings

    from memoryadmin.facts import replicas, selectors, services
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

    cases = {"django read": read_routed if configured else read_direct}
    if configured:
        cases["django read, no replica configured (primary)"] = read_direct
        cases["router decision alone"] = decide
    for name in raw:
        cases[f"raw SQL {name}"] = raw_read(name)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(50):  # warm up: connections, plans, caches
        for call in cases.values():
            call()
    names = list(cases)
    for i in range(n):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            started = time.perf_counter()
            cases[name]()
            times[name].append(time.perf_counter() - started)
    if configured:
        assert replicas.subject_read_alias(SUBJECT) != "default", "reads did not reach the replica"
    return {
        name: {
            "p50_us": median(values) * 1e6,
            "p99_us": sorted(values)[int(len(values) * 0.99)] * 1e6,
        }
        for name, values in times.items()
    }


def _child(env: dict[str, str], n: int) -> dict[str, dict[str, float]]:
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
    return json.loads(done.stdout.strip().splitlines()[-1])


def _table(title: str, rows: dict[str, dict[str, float]], baseline: str) -> None:
    print(f"\n{title}")
    base = rows[baseline]["p50_us"]
    for name, row in rows.items():
        print(
            f"  {name:<48} p50 {row['p50_us']:8.0f} us  p99 {row['p99_us']:8.0f} us"
            f"  {row['p50_us'] / base:5.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
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
