"""Load test against `make serve`: gunicorn with 2 workers, 32 concurrent clients, 60 seconds of
mixed reads and writes over HTTP. Not a test (speed is measured here, not asserted in the suite),
but it checks what must hold under load and exits non-zero when something does not:

- no 5xx answer at all;
- no lost update: 32 clients increment 8 shared counters with read + If-Match; every increment
  that got a 200 is in the final value, exactly once;
- each unconditional PUT answers with the value it wrote (its own committed state);
- one rate limit for all gunicorn workers: a token limited to RATE requests per second gets at
  most RATE per one-second window in total, although its requests are spread over both workers.

    DATABASE_URL=postgres://... .venv/bin/python bench/load_test.py [--duration 60] [--clients 32]

It starts `make serve` itself (PORT, WEB_CONCURRENCY=2, DEBUG off, a random SECRET_KEY, the
shared cache on LOAD_REDIS_URL) unless --base-url points at a server already running.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import secrets
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
COUNTERS = 8
TRAVELLERS = 200
LIMITED_CLIENTS = 8
# Requests per second for the limited token: its clients send about three times as many, so one
# count per worker (twice the limit in total) would show.
LIMITED_RATE = 20


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    increments: Counter = field(default_factory=Counter)  # counter key -> successful increments
    conflicts: int = 0
    own_state_mismatches: int = 0
    limited_ok: Counter = field(default_factory=Counter)  # second -> 200s of the limited token
    limited_refused: int = 0
    elapsed: float = 0.0
    final_counts: dict[str, int] = field(default_factory=dict)

    def record(self, op: str, started: float, response: httpx.Response) -> None:
        self.latencies[op].append(time.perf_counter() - started)
        self.statuses[response.status_code] += 1
        if response.status_code >= 500:
            self.server_errors.append(f"{op} {response.status_code} {response.text[:200]}")


def env_for_server(port: int) -> dict[str, str]:
    redis_url = os.environ.get("LOAD_REDIS_URL", "redis://127.0.0.1:6379/11")
    return {
        **os.environ,
        "DEBUG": "false",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
        "PORT": str(port),
        "WEB_CONCURRENCY": "2",
        "CELERY_BROKER_URL": os.environ.get("CELERY_BROKER_URL", redis_url),
        "CACHE_URL": os.environ.get("CACHE_URL", redis_url),
        "GUNICORN_ACCESS_LOG": "/dev/null",
        "STATIC_ROOT": os.environ.get("STATIC_ROOT", "/tmp/memoryadmin-load-static"),
        "API_THROTTLE_RATE": "1000000/min",
    }


def manage(env: dict[str, str], *args: str) -> str:
    out = subprocess.run(  # noqa: S603 - fixed argv
        [str(ROOT / ".venv" / "bin" / "python"), "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


def issue_token(env: dict[str, str], name: str, rate: str) -> str:
    out = manage(
        env,
        "create_service_token",
        name,
        "--scope",
        "memory:read",
        "--scope",
        "memory:write",
        "--rate",
        rate,
    )
    return out.strip().splitlines()[-1]


def start_server(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(  # noqa: S603 - fixed argv
        ["make", "serve"],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=open("/tmp/memoryadmin-load-serve.log", "wb"),  # noqa: SIM115
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        if server.poll() is not None:
            raise RuntimeError("make serve exited; see /tmp/memoryadmin-load-serve.log")
        time.sleep(0.5)
    raise RuntimeError("make serve did not answer /healthz in time")


def stop_server(server: subprocess.Popen[bytes]) -> None:
    os.killpg(server.pid, signal.SIGTERM)  # make, and the gunicorn master and workers under it
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)


async def seed(client: httpx.AsyncClient, run: str) -> None:
    for n in range(TRAVELLERS):
        facts = [
            {"key": "seat_preference", "value": f"Prefers aisle seats, run {run}"},
            {
                "key": "overnight_flight",
                "value": "Avoids overnight flights",
                "category": "constraint",
            },
            {"key": "meal", "value": "Vegetarian meals"},
        ]
        response = await client.put(f"/api/v1/subjects/LOAD-{run}-{n}/facts", json={"facts": facts})
        response.raise_for_status()
    counters = [{"key": f"counter_{n}", "value": "count 0"} for n in range(COUNTERS)]
    response = await client.put(f"/api/v1/subjects/LOAD-{run}-C/facts", json={"facts": counters})
    response.raise_for_status()


async def increment(client: httpx.AsyncClient, run: str, stats: Stats) -> None:
    key = f"counter_{random.randrange(COUNTERS)}"
    url = f"/api/v1/subjects/LOAD-{run}-C/facts/{key}"
    started = time.perf_counter()
    current = await client.get(url)
    stats.record("counter read", started, current)
    if current.status_code != 200:
        return
    count = int(current.json()["value"].split()[-1])
    started = time.perf_counter()
    written = await client.put(
        url, json={"value": f"count {count + 1}"}, headers={"If-Match": current.headers["ETag"]}
    )
    stats.record("counter write (If-Match)", started, written)
    if written.status_code == 200:
        stats.increments[key] += 1
    elif written.status_code == 412:
        stats.conflicts += 1


async def mixed_client(
    base: str, secret: str, run: str, until: float, stats: Stats, number: int
) -> None:
    headers = {"Authorization": f"Bearer {secret}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as client:
        while time.monotonic() < until:
            subject = f"LOAD-{run}-{random.randrange(TRAVELLERS)}"
            roll = random.random()
            started = time.perf_counter()
            if roll < 0.30:
                stats.record(
                    "get facts", started, await client.get(f"/api/v1/subjects/{subject}/facts")
                )
            elif roll < 0.50:
                stats.record(
                    "tier one", started, await client.get(f"/api/v1/subjects/{subject}/tier-one")
                )
            elif roll < 0.60:
                stats.record(
                    "search",
                    started,
                    await client.get(
                        f"/api/v1/subjects/{subject}/facts/search", params={"q": "aisle"}
                    ),
                )
            elif roll < 0.85:
                await increment(client, run, stats)
            else:
                value = f"Client {number} wrote {random.randrange(10**6)}"
                response = await client.put(
                    f"/api/v1/subjects/{subject}/facts/note", json={"value": value}
                )
                stats.record("put fact", started, response)
                if response.status_code == 200 and response.json()["value"] != value:
                    stats.own_state_mismatches += 1


async def limited_client(base: str, secret: str, run: str, until: float, stats: Stats) -> None:
    headers = {"Authorization": f"Bearer {secret}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as client:
        while time.monotonic() < until:
            started = time.perf_counter()
            response = await client.get(f"/api/v1/subjects/LOAD-{run}-0/tier-one")
            stats.record("limited token", started, response)
            if response.status_code == 200:
                stats.limited_ok[int(time.time())] += 1
            elif response.status_code == 429:
                stats.limited_refused += 1
                await asyncio.sleep(0.02)


async def drive(base: str, main: str, limited: str, clients: int, duration: float) -> Stats:
    run = secrets.token_hex(3)
    async with httpx.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {main}"}, timeout=60
    ) as client:
        await seed(client, run)
    stats = Stats()
    until = time.monotonic() + duration
    tasks = [
        mixed_client(base, main, run, until, stats, n) for n in range(clients - LIMITED_CLIENTS)
    ]
    tasks += [limited_client(base, limited, run, until, stats) for _ in range(LIMITED_CLIENTS)]
    started = time.monotonic()
    await asyncio.gather(*tasks)
    stats.elapsed = time.monotonic() - started
    async with httpx.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {main}"}, timeout=60
    ) as client:
        final = (await client.get(f"/api/v1/subjects/LOAD-{run}-C/facts")).json()["facts"]
    stats.final_counts = {fact["key"]: int(fact["value"].split()[-1]) for fact in final}
    return stats


def report(stats: Stats, clients: int) -> bool:
    elapsed = stats.elapsed
    total = sum(stats.statuses.values())
    print(f"\n{clients} clients, {elapsed:.1f} s, {total} requests, {total / elapsed:.0f} req/s")
    print(f"statuses: {dict(sorted(stats.statuses.items()))}")
    print(f"{'operation':<26}{'count':>8}{'p50 ms':>10}{'p99 ms':>10}")
    for op, values in sorted(stats.latencies.items()):
        ordered = sorted(values)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        print(
            f"{op:<26}{len(values):>8}{statistics.median(values) * 1000:>10.1f}{p99 * 1000:>10.1f}"
        )
    lost = {
        key: (stats.increments[key], stats.final_counts.get(key))
        for key in stats.increments
        if stats.final_counts.get(key) != stats.increments[key]
    }
    accepted = sum(stats.limited_ok.values())
    worst_second = max(stats.limited_ok.values(), default=0)
    allowed = LIMITED_RATE * (int(elapsed) + 1)
    print(
        f"counter increments: {sum(stats.increments.values())} committed, "
        f"{stats.conflicts} refused by If-Match (412), lost: {len(lost)}"
    )
    print(f"own committed state mismatches: {stats.own_state_mismatches}")
    print(
        f"limited token ({LIMITED_RATE}/s, {LIMITED_CLIENTS} clients over 2 workers): "
        f"{accepted} accepted, {stats.limited_refused} refused (429), busiest second "
        f"{worst_second}, ceiling {allowed}"
    )
    checks = {
        "no 5xx": not stats.server_errors,
        "no lost update": not lost,
        "each PUT answered its own state": stats.own_state_mismatches == 0,
        "limit enforced once across workers": (
            accepted <= allowed and worst_second <= 2 * LIMITED_RATE
        ),
    }
    for name, ok in checks.items():
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    for line in stats.server_errors[:5]:
        print("   ", line)
    if lost:
        print("    lost:", lost)
    return all(checks.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--port", type=int, default=int(os.environ.get("LOAD_PORT", "8111")))
    parser.add_argument("--base-url", default="")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        print("Set DATABASE_URL to a PostgreSQL database (it gets demo-free load data).")
        return 2
    env = env_for_server(args.port)
    server = None if args.base_url else start_server(env, args.port)
    base = args.base_url or f"http://127.0.0.1:{args.port}"
    try:
        main_secret = issue_token(env, "load-test", "1000000/min")
        limited_secret = issue_token(env, "load-test-limited", f"{LIMITED_RATE}/s")
        stats = asyncio.run(drive(base, main_secret, limited_secret, args.clients, args.duration))
    finally:
        if server is not None:
            stop_server(server)
    return 0 if report(stats, args.clients) else 1


if __name__ == "__main__":
    sys.exit(main())
