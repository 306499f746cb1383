"""Throughput of the agent API (GET tier-one and GET facts, keep-alive clients) under gunicorn with
2 and 4 workers, straight to PostgreSQL and through pgbouncer in transaction mode
(`DATABASE_POOLER=transaction`), in one run, the configurations taking turns.

    SECRET_KEY=... DATABASE_URL=postgres://postgres@127.0.0.1:5432/memoryadmin_pool \\
        .venv/bin/python bench/pooler_throughput.py [--seconds 8] [--clients 16]

DATABASE_URL's database gets a few facts and a token (migrate it first); pgbouncer (Debian's,
tests/support/pgbouncer.py) is started in front of the same server.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
SUBJECTS = [f"POOL-BENCH-{n}" for n in range(16)]


async def _hammer(base: str, secret: str, seconds: float, clients: int) -> tuple[int, int]:
    done = errors = 0
    deadline = time.monotonic() + seconds

    async def one(number: int) -> None:
        nonlocal done, errors
        headers = {"Authorization": f"Bearer {secret}"}
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as client:
            n = 0
            while time.monotonic() < deadline:
                subject = SUBJECTS[(number + n) % len(SUBJECTS)]
                path = "tier-one" if n % 2 else "facts"
                answer = await client.get(f"/api/v1/subjects/{subject}/{path}")
                n += 1
                if answer.status_code == 200:
                    done += 1
                else:
                    errors += 1

    await asyncio.gather(*(one(n) for n in range(clients)))
    return done, errors


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--clients", type=int, default=16)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    import django

    django.setup()
    from django.db import connection

    from memoryadmin.api.tokens import token_issue
    from memoryadmin.facts import services
    from memoryadmin.facts.actors import Actor
    from tests.client.servers import free_port
    from tests.support.gunicorn import Gunicorn
    from tests.support.pgbouncer import PgBouncer

    for subject in SUBJECTS:
        services.fact_upsert(
            subject_id=subject,
            facts=[services.FactDraft(f"key{i}", f"value {i}", "preference") for i in range(10)],
            actor=Actor.agent("bench"),
        )
    _, secret = token_issue(name="pool-bench", scopes=["memory:read"], throttle_rate="10000000/min")
    conf = connection.settings_dict
    bouncer = PgBouncer(
        server_host=conf["HOST"] or "127.0.0.1", server_port=int(conf["PORT"] or 5432), pool_size=20
    ).start()
    direct = os.environ["DATABASE_URL"]
    configs = {
        "direct": {"DATABASE_URL": direct, "DB_CONN_MAX_AGE": "60"},
        "pgbouncer": {
            "DATABASE_URL": bouncer.url(conf["NAME"]),
            "DATABASE_POOLER": "transaction",
            "DB_CONN_MAX_AGE": "60",
        },
    }
    results: dict[tuple[str, int], list[float]] = {}
    try:
        for _round in range(2):
            for workers in (2, 4):
                for name, env in configs.items():
                    web = Gunicorn(port=free_port(), env=env, workers=workers).start()
                    try:
                        asyncio.run(_hammer(web.url, secret, 1.0, args.clients))  # warm up
                        done, errors = asyncio.run(
                            _hammer(web.url, secret, args.seconds, args.clients)
                        )
                    finally:
                        web.stop()
                    if errors:
                        raise SystemExit(f"{name} {workers} workers: {errors} errors")
                    results.setdefault((name, workers), []).append(done / args.seconds)
    finally:
        bouncer.stop()
    print(f"\n{args.clients} keep-alive clients, GET facts / tier-one, {args.seconds:.0f} s each")
    for workers in (2, 4):
        base = max(results[("direct", workers)])
        for name in configs:
            best = max(results[(name, workers)])
            print(
                f"  {workers} workers, {name:<10} {best:7.0f} req/s  {best / base:5.2f}x of direct"
            )


if __name__ == "__main__":
    main()
