"""Fault run: Redis killed under load against `make serve`. PostgreSQL is the system of record,
so while Redis is down the agent API must keep serving reads and writes from it.

Two private Redis servers: A is the broker (CELERY_BROKER_URL), B the shared cache (CACHE_URL).
Mixed load from `load_test.py` (reads, searches, If-Match increments, PUTs) plus posted turns
runs for `--duration` seconds. `--case` says what is killed (SIGKILL) and started again during
it: `broker` (A alone), `cache` (B alone), `both` (A and B at once), or `all` (the three one
after the other, the duration split in three). A Celery worker (against a fake Messages API)
processes the turns; after the load the reaper (beat's `reap_jobs_task`) sends what the broker
never got. Checks, exit status 1 when one fails:

- no 5xx answer at all, and no request failed at the connection;
- no lost update (every increment that got a 200 is in the final value, exactly once);
- the outage was real: /healthz said `degraded`, naming what was killed, and turns were posted
  while it lasted;
- every posted turn is processed once Redis is back: each job finished, one model call per job.

    DATABASE_URL=postgres://... .venv/bin/python bench/fault_test.py [--duration 60] [--case all]

Ports: FAULT_PORT (gunicorn, default 8191), FAULT_REDIS_PORTS (default "6391,6392").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import load_test  # noqa: E402
from memoryadmin.testing.fake_anthropic import FakeAnthropic, tool_use  # noqa: E402

TURN_CLIENTS = 4


class RedisServer:
    """A redis-server of our own on a private port, killed (SIGKILL) and started again."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None
        self.dir = tempfile.mkdtemp(prefix=f"fault-redis-{port}-")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(  # noqa: S603 - fixed argv
            [
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.dir,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            ping = subprocess.run(
                ["redis-cli", "-p", str(self.port), "ping"],  # noqa: S603,S607
                capture_output=True,
                text=True,
            )
            if ping.stdout.strip() == "PONG":
                return
            time.sleep(0.05)
        raise RuntimeError(f"redis-server on {self.port} did not start")

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None

    def stop(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class Outage:
    """What is down now (set by the fault plan), and what was seen while it was."""

    def __init__(self) -> None:
        self.down: str = ""
        self.turns_while_down: dict[str, int] = {}
        self.health_while_down: dict[str, dict] = {}


async def turn_client(
    base: str,
    secret: str,
    run: str,
    until: float,
    stats: load_test.Stats,
    jobs: list[str],
    number: int,
    outage: Outage,
) -> None:
    headers = {"Authorization": f"Bearer {secret}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as client:
        n = 0
        while time.monotonic() < until:
            n += 1
            started = time.perf_counter()
            response = await client.post(
                f"/api/v1/subjects/FAULT-{run}-{number}/turns",
                json={
                    "session_id": f"s-{run}-{number}",
                    "turn_id": f"t-{n}",
                    "messages": [{"role": "user", "text": "I always pick an aisle seat."}],
                },
            )
            stats.record("post turn", started, response)
            if response.status_code in (200, 202):
                jobs.append(response.json()["job_id"])
                if outage.down:
                    outage.turns_while_down[outage.down] = (
                        outage.turns_while_down.get(outage.down, 0) + 1
                    )
            await asyncio.sleep(0.1)


async def health_during(base: str, outage: Outage, case: str, killed: tuple[str, ...]) -> None:
    """/healthz while `case` is down: `degraded`, with what was killed as `error` (a few tries:
    a connection already open answers until Redis's socket is gone)."""
    async with httpx.AsyncClient(base_url=base, timeout=10) as client:
        for _ in range(20):
            body = (await client.get("/healthz")).json()
            outage.health_while_down[case] = body
            if body.get("status") == "degraded" and all(body.get(k) == "error" for k in killed):
                return
            await asyncio.sleep(0.25)


async def drive(base: str, secret: str, duration: float, phases: list, outage: Outage) -> tuple:
    run = secrets.token_hex(3)
    async with httpx.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {secret}"}, timeout=60
    ) as client:
        await load_test.seed(client, run)
    stats = load_test.Stats()
    jobs: list[str] = []
    failures: list[str] = []
    until = time.monotonic() + duration

    async def guarded(coro):
        try:
            await coro
        except httpx.HTTPError as exc:  # a refused or dropped connection is a failure too
            failures.append(f"{type(exc).__name__}: {exc}")

    async def fault_plan() -> None:
        started = time.monotonic()
        for at, label, action, case, killed in phases:
            await asyncio.sleep(max(0.0, started + at - time.monotonic()))
            print(f"  {time.monotonic() - started:5.1f} s  {label}", flush=True)
            if not killed:
                outage.down = ""
            await asyncio.to_thread(action)
            if killed:
                outage.down = case
                await health_during(base, outage, case, killed)

    tasks = [guarded(load_test.mixed_client(base, secret, run, until, stats, n)) for n in range(12)]
    tasks += [
        guarded(turn_client(base, secret, run, until, stats, jobs, n, outage))
        for n in range(TURN_CLIENTS)
    ]
    began = time.monotonic()
    await asyncio.gather(fault_plan(), *tasks)
    stats.elapsed = time.monotonic() - began
    async with httpx.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {secret}"}, timeout=60
    ) as client:
        final = (await client.get(f"/api/v1/subjects/LOAD-{run}-C/facts")).json()["facts"]
    stats.final_counts = {fact["key"]: int(fact["value"].split()[-1]) for fact in final}
    return stats, jobs, failures


def wait_for_health(base: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 300  # `make serve` may reinstall first
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if server.poll() is not None:
            raise RuntimeError("make serve exited; see /tmp/memoryadmin-fault-serve.log")
        time.sleep(0.5)
    raise RuntimeError("make serve did not answer /healthz in time")


def reap() -> str:
    """What beat's `reap_jobs_task` does every minute, in this process (configured like the
    server, `setup_django`): turns the broker never got are sent now, and turns it lost with
    its restart (this Redis keeps nothing on disk) after a few seconds instead of the
    production visibility timeout. A second delivery of a finished job does nothing."""
    from memoryadmin.extraction.services import jobs_reap

    return str(jobs_reap())


def setup_django(env: dict[str, str]) -> None:
    import django

    os.environ.update(
        {**env, "EXTRACTION_RESEND_AFTER_SECONDS": "0", "BROKER_VISIBILITY_TIMEOUT_SECONDS": "5"}
    )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    django.setup()


def wait_for_jobs(base: str, secret: str, jobs: list[str], timeout: float) -> dict[str, str]:
    statuses: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    with httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {secret}"}, timeout=30
    ) as client:
        while True:
            for job in jobs:
                if statuses.get(job) not in ("succeeded", "skipped", "failed"):
                    statuses[job] = client.get(f"/api/v1/jobs/{job}").json().get("status", "?")
            waiting = [job for job in jobs if statuses[job] in ("queued", "running")]
            if not waiting or time.monotonic() > deadline:
                return statuses
            print(f"  {len(waiting)} jobs unfinished; reaper: {reap()}", flush=True)
            time.sleep(2)


# case -> (what /healthz must name as "error" while it is down, the label)
CASES = {
    "broker": (("broker",), "the broker's Redis"),
    "cache": (("cache",), "the cache's Redis"),
    "both": (("broker", "cache"), "both Redis servers"),
}


def fault_phases(
    cases: list[str], duration: float, broker: RedisServer, cache: RedisServer
) -> list[tuple]:
    """Each case gets an equal window of the run: killed 10% into it, started again at 75%, so
    load runs before, during and after each outage."""
    servers = {"broker": [broker], "cache": [cache], "both": [broker, cache]}
    window = duration / len(cases)
    phases = []
    for n, case in enumerate(cases):
        killed, label = CASES[case]
        group = servers[case]
        phases.append(
            (
                window * (n + 0.10),
                f"kill {label}",
                lambda g=group: [s.kill() for s in g],
                case,
                killed,
            )
        )
        phases.append(
            (
                window * (n + 0.75),
                f"start {label} again",
                lambda g=group: [s.start() for s in g],
                case,
                (),
            )
        )
    return phases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--port", type=int, default=int(os.environ.get("FAULT_PORT", "8191")))
    parser.add_argument(
        "--case",
        choices=[*CASES, "all"],
        default="all",
        help="what is killed: the broker's Redis, the cache's, both, or the three "
        "cases one after the other",
    )
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        print("Set DATABASE_URL to a PostgreSQL database.")
        return 2
    ports = [int(p) for p in os.environ.get("FAULT_REDIS_PORTS", "6391,6392").split(",")]
    broker, cache = RedisServer(ports[0]), RedisServer(ports[1])
    model = FakeAnthropic().start()
    model.fallback = tool_use([])  # the model finds nothing to remember: one call per job
    env = {
        **load_test.env_for_server(args.port),
        "CELERY_BROKER_URL": broker.url,
        "CACHE_URL": cache.url,
        "ANTHROPIC_API_KEY": "fault-test-key",
        "ANTHROPIC_BASE_URL": model.base_url,
        "ANTHROPIC_RETRY_BACKOFF_SECONDS": "0.1",
        "API_HEALTH_BROKER_TIMEOUT_SECONDS": "1",
        "LOG_LEVEL": "WARNING",
    }
    setup_django(env)
    server = worker = None
    d = args.duration
    cases = list(CASES) if args.case == "all" else [args.case]
    phases = fault_phases(cases, d, broker, cache)
    try:
        broker.start()
        cache.start()
        server = subprocess.Popen(  # noqa: S603 - fixed argv; its own group, stopped below
            ["make", "serve"],
            cwd=ROOT,
            env=env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=open("/tmp/memoryadmin-fault-serve.log", "wb"),  # noqa: SIM115
        )
        wait_for_health(f"http://127.0.0.1:{args.port}", server)
        worker = subprocess.Popen(  # noqa: S603 - fixed argv
            [
                str(ROOT / ".venv" / "bin" / "celery"),
                "-A",
                "memoryadmin",
                "worker",
                "--pool=solo",
                "--loglevel=WARNING",
                "--without-heartbeat",
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=ROOT,
            env=env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=open("/tmp/memoryadmin-fault-worker.log", "wb"),  # noqa: SIM115
        )
        secret = (
            load_test.manage(
                env,
                "create_service_token",
                "fault-test",
                "--scope",
                "memory:read",
                "--scope",
                "memory:write",
                "--scope",
                "turns:write",
                "--rate",
                "1000000/min",
            )
            .strip()
            .splitlines()[-1]
        )
        base = f"http://127.0.0.1:{args.port}"
        print(
            f"fault run: {d:.0f} s of mixed load; killed and started again: "
            f"{', '.join(CASES[c][1] for c in cases)}"
        )
        outage = Outage()
        stats, jobs, failures = asyncio.run(drive(base, secret, d, phases, outage))
        health = httpx.get(f"{base}/healthz", timeout=10).json()
        statuses = wait_for_jobs(base, secret, jobs, timeout=max(180.0, d))
    finally:
        for process in (worker, server):
            if process is not None:
                load_test.stop_server(process)

        broker.stop()
        cache.stop()
        model.stop()
    ok = load_test.report(stats, 12 + TURN_CLIENTS)
    finished = sum(1 for s in statuses.values() if s in ("succeeded", "skipped"))
    calls = len(model.requests)
    checks = {
        "no request failed at the connection": not failures,
        "every posted turn processed once Redis is back": finished == len(jobs) > 0,
        "one model call per job": calls == len(jobs),
        "healthz back to ok": health.get("status") == "ok",
    }
    for case in cases:
        seen = outage.health_while_down.get(case, {})
        checks[f"{case}: /healthz said degraded, naming {' and '.join(CASES[case][0])}"] = seen.get(
            "status"
        ) == "degraded" and all(seen.get(k) == "error" for k in CASES[case][0])
        checks[f"{case}: turns posted while it was down"] = outage.turns_while_down.get(case, 0) > 0
    print(
        f"turns posted: {len(jobs)} ({json.dumps(outage.turns_while_down)} while down), "
        f"finished: {finished}, model calls: {calls}, "
        f"statuses: {json.dumps(sorted(set(statuses.values())))}"
    )
    for name, passed in checks.items():
        print(f"  {'PASS' if passed else 'FAIL'}  {name}")
    for line in failures[:5]:
        print("   ", line)
    # The limited-token check of load_test does not apply (no limited clients here).
    return 0 if ok and all(checks.values()) else 1


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main())
