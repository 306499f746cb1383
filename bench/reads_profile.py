"""Where the agent's read spends its time above one raw query (issue 42): each layer of
`DjangoMemoryStore.tier_one` and `search_facts` timed alone, in turns, on a loaded database.

    SECRET_KEY=bench-peers DATABASE_URL=postgres://.../ma_peers_1m \\
        .venv/bin/python bench/reads_profile.py --n 2000 [--cprofile]

Prints p50 (µs) of each step: the raw statement on a bare connection, our statement on the same
connection, the pool's checkout and return, `subject_fetch` (router, pool, statement, rows),
the settings check, the subject check, the wire models, and the whole call.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
os.environ.setdefault("MEMORY_STORE_NATIVE_ASYNC", "true")

import django  # noqa: E402

django.setup()

from django.utils import timezone  # noqa: E402

from bench import generate  # noqa: E402
from bench.scenarios.raw import RAW_SEARCH_PEERS, RAW_TIER_ONE  # noqa: E402

CLOCK = time.perf_counter  # --cpu: time.process_time, this process's CPU (load-independent)


async def main_async(n: int, cprofile: bool) -> None:
    import psycopg

    from memoryadmin import db
    from memoryadmin.facts import selectors
    from memoryadmin.facts import store as store_module
    from memoryadmin.facts.sql import SQL_SEARCH, SQL_TIER_ONE
    from memoryadmin.facts.store import DjangoMemoryStore

    conninfo = generate.conninfo_from_env()
    raw = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
    store = DjangoMemoryStore(native=True)
    rng = random.Random(5)
    subjects = [generate.normal_id(rng.randrange(1000)) for _ in range(500)]
    await asyncio.to_thread(selectors.memory_config)

    def subject(i: int) -> str:
        return subjects[i % len(subjects)]

    async def pool_only(i: int) -> None:
        async with db.store_connection():
            pass

    async def raw_tier(i):
        return await (await raw.execute(RAW_TIER_ONE, [subject(i)])).fetchall()

    async def raw_search(i):
        return await (
            await raw.execute(RAW_SEARCH_PEERS, [subject(i), "%seat%", "%seat%"])
        ).fetchall()

    async def ours_sql_on_raw_tier(i):
        p = {"subject": subject(i), "now": timezone.now(), "cap": 8}
        return await (await raw.execute(SQL_TIER_ONE, p)).fetchall()

    async def ours_sql_on_raw_search(i):
        p = {"subject": subject(i), "now": timezone.now(), "terms": "seat"}
        return await (await raw.execute(SQL_SEARCH, p)).fetchall()

    async def fetch_tier(i):
        return await db.subject_fetch(
            SQL_TIER_ONE, {"subject": subject(i), "now": timezone.now(), "cap": 8}
        )

    rows_sample = await fetch_tier(0)

    async def wire(i):
        return store_module._wire_rows(rows_sample)

    async def config(i):
        return await store_module._config()

    async def check(i):
        return store_module._check_subject(subject(i))

    async def now(i):
        return timezone.now()

    cases = {
        "raw tier one (bare conn)": raw_tier,
        "raw search (bare conn)": raw_search,
        "our tier-one SQL on the bare conn": ours_sql_on_raw_tier,
        "our search SQL on the bare conn": ours_sql_on_raw_search,
        "pool checkout + return": pool_only,
        "subject_fetch(tier one)": fetch_tier,
        "_wire_rows (tier one's rows)": wire,
        "_config()": config,
        "_check_subject": check,
        "timezone.now()": now,
        "store.tier_one": lambda i: store.tier_one(subject(i)),
        "store.search_facts": lambda i: store.search_facts(subject(i), "seat"),
    }
    samples = {name: [] for name in cases}
    names = list(cases)
    for i in range(50):
        for name in names:
            await cases[name](i)
    for i in range(n):
        random.shuffle(names)
        for name in names:
            start = CLOCK()
            await cases[name](i)
            samples[name].append(CLOCK() - start)
    for name in cases:
        _line(name, samples[name])
    if cprofile:
        import cProfile
        import pstats

        for label, fn in (
            ("tier_one", lambda i: store.tier_one(subject(i))),
            ("search", lambda i: store.search_facts(subject(i), "seat")),
        ):
            prof = cProfile.Profile()
            prof.enable()
            for i in range(n):
                await fn(i)
            prof.disable()
            print(f"\n--- cProfile {label}, {n} calls")
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    await raw.close()
    await store.aclose()


def _line(name: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    p50, p99 = statistics.median(ordered), ordered[int(len(ordered) * 0.99)]
    print(f"{name:<40} p50 {p50 * 1e6:8.1f} µs  p99 {p99 * 1e6:8.1f} µs")


def main_api(n: int, cprofile: bool) -> None:
    """The API's GET tier-one and GET facts/search through Django's test client (in-process
    WSGI: the middleware, the token check, the view, the JSON; no socket, no gunicorn) against
    the raw statements on a bare sync psycopg connection, in turns."""
    import psycopg
    from django.test import Client

    from memoryadmin.api.tokens import token_issue

    _, secret = token_issue(name="reads-profile", scopes=["memory:read"])
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    raw = psycopg.connect(generate.conninfo_from_env(), autocommit=True)
    rng = random.Random(5)
    subjects = [generate.normal_id(rng.randrange(1000)) for _ in range(500)]

    def get(path: str) -> None:
        response = client.get(path)
        assert response.status_code == 200, (path, response.status_code, response.content[:200])

    cases = {
        "raw tier one": lambda s: raw.execute(RAW_TIER_ONE, [s]).fetchall(),
        "raw search": lambda s: raw.execute(RAW_SEARCH_PEERS, [s, "%seat%", "%seat%"]).fetchall(),
        "GET tier-one (test client)": lambda s: get(f"/api/v1/subjects/{s}/tier-one"),
        "GET facts/search (test client)": lambda s: get(
            f"/api/v1/subjects/{s}/facts/search?q=seat"
        ),
    }
    samples = {name: [] for name in cases}
    names = list(cases)
    for i in range(n + 50):
        random.shuffle(names)
        for name in names:
            start = CLOCK()
            cases[name](subjects[i % len(subjects)])
            if i >= 50:
                samples[name].append(CLOCK() - start)
    for name in cases:
        _line(name, samples[name])
    if cprofile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for i in range(n):
            get(f"/api/v1/subjects/{subjects[i % len(subjects)]}/tier-one")
        prof.disable()
        print(f"\n--- cProfile GET tier-one, {n} calls")
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
    raw.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--cprofile", action="store_true")
    parser.add_argument("--api", action="store_true", help="the API through the test client")
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="this process's CPU time per call (time.process_time), not the wall clock: what a"
        " loaded machine's waits do not inflate",
    )
    args = parser.parse_args()
    if args.cpu:
        global CLOCK
        CLOCK = time.process_time
    if args.api:
        main_api(args.n, args.cprofile)
    else:
        asyncio.run(main_async(args.n, args.cprofile))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
