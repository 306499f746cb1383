"""The benchmark suite: every scenario against its baseline, measured in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/ma_bench python bench/run.py --preset small

Loads the preset with bench/generate.py (COPY), then runs the scenarios and prints one table:
p50 and p99 latency, throughput, the baseline's p50 and the ratio. Cases of one scenario take
turns call by call, so noise from the other tenants of the machine hits them alike. Ratios are
the point: they stay comparable across machines.

Scenarios: 1 agent read (in-process and HTTP against gunicorn with 2 workers, plus throughput
under 32 clients against a constant JSON view), 2 agent write (upsert of 3 facts, delete),
3 search (heavy travellers), 7 peers (LangGraph's AsyncPostgresStore when installed). The
numbers and what is not measured are in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

import django  # noqa: E402

from bench import generate  # noqa: E402

HTTP_PORT = int(os.environ.get("BENCH_HTTP_PORT", "8121"))
CLIENTS = 32


@dataclass
class Row:
    scenario: str
    operation: str
    samples: list[float] = field(default_factory=list)  # seconds
    throughput: float | None = None  # per second, when measured under load
    baseline: Row | None = None
    target: str = ""
    limit: float | None = None  # the ratio the target allows

    def p(self, q: float) -> float:
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def p50(self) -> float:
        return statistics.median(self.samples)

    @property
    def ops(self) -> float:
        if self.throughput is not None:
            return self.throughput
        return len(self.samples) / sum(self.samples)

    @property
    def ratio(self) -> float | None:
        if self.baseline is None:
            return None
        if self.throughput is not None and self.baseline.throughput is not None:
            return self.throughput / self.baseline.throughput
        return self.p50 / self.baseline.p50


async def take_turns(cases: dict[str, Callable[[int], Awaitable[object]]], n: int) -> dict:
    """Call each case once per round, in a shuffled order, n rounds; seconds per call."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    for index in range(max(3, n // 20)):  # warm-up: connections, prepared statements, caches
        for name in names:
            await cases[name](index)
    for index in range(n):
        random.shuffle(names)
        for name in names:
            start = time.perf_counter()
            await cases[name](index)
            samples[name].append(time.perf_counter() - start)
    return samples


def sync_case(fn: Callable[[int], object]) -> Callable[[int], Awaitable[object]]:
    async def call(index: int) -> object:
        return fn(index)

    return call


def make_store(*, native: bool, **kwargs: object) -> object:
    """DjangoMemoryStore on its native async path (or Django's thread when native=False). An
    older checkout without the native path (a "before" run) gets its only path."""
    from memoryadmin.facts.store import DjangoMemoryStore

    try:
        return DjangoMemoryStore(native=native, **kwargs)
    except TypeError:
        return DjangoMemoryStore(**kwargs)


# --- scenarios ----------------------------------------------------------------------------------


RAW_READ = (
    "SELECT key, value, category, updated_at, source_session_id FROM memory_fact"
    " WHERE subject_id = %s AND status = 'active' AND (expires_at IS NULL OR expires_at > now())"
    " ORDER BY created_at, id"
)
RAW_TIER_ONE = (
    "SELECT key, value, category, updated_at, source_session_id FROM memory_fact"
    " WHERE subject_id = %s AND status = 'active' AND NOT sensitive"
    " AND (expires_at IS NULL OR expires_at > now()) ORDER BY category <> 'constraint',"
    " updated_at DESC LIMIT 8"
)
RAW_SEARCH = (
    "SELECT key, value, category, updated_at, source_session_id FROM memory_fact"
    " WHERE subject_id = %s AND status = 'active' AND (expires_at IS NULL OR expires_at > now())"
    " AND (lower(value) LIKE %s OR lower(key) LIKE %s)"
)
SWEEP_EVENTS_FLOOR = (
    "INSERT INTO memory_fact_event (subject_id, key, key_hash, action, actor_kind, actor_label,"
    " reason, session_tag, created_at) SELECT subject_id, '#' || md5(key), '#' || md5(key),"
    " 'deleted', 'retention', 'retention rule', 'Expired under the retention policy.', '', now()"
    " FROM memory_fact WHERE expires_at <= now()"
)
RAW_UPSERT = (
    "INSERT INTO memory_fact (subject_id, key, value, category, updated_at, source_session_id,"
    " created_at, origin, status, sensitive, expiry_pinned, version)"
    " SELECT %s, k, v, 'preference', now(), '', now(), 'agent', 'active', false, false, 1"
    " FROM unnest(%s::text[], %s::text[]) AS r(k, v)"
    " ON CONFLICT (subject_id, key) DO UPDATE SET value = EXCLUDED.value,"
    " updated_at = EXCLUDED.updated_at, version = memory_fact.version + 1"
)


async def scenario_reads(ctx: Context, rows: list[Row]) -> None:
    store = make_store(native=True)
    hop = make_store(native=False)
    raw = ctx.raw
    subjects = ctx.subjects

    async def raw_read(i: int) -> object:
        return await (await raw.execute(RAW_READ, [subjects[i % len(subjects)]])).fetchall()

    async def raw_tier(i: int) -> object:
        return await (await raw.execute(RAW_TIER_ONE, [subjects[i % len(subjects)]])).fetchall()

    async def raw_search(i: int) -> object:
        return await (
            await raw.execute(RAW_SEARCH, [subjects[i % len(subjects)], "%aisle%", "%aisle%"])
        ).fetchall()

    cases = {
        "raw get": raw_read,
        "raw tier one": raw_tier,
        "raw search": raw_search,
        "get_facts": lambda i: store.get_facts(subjects[i % len(subjects)]),
        "tier_one": lambda i: store.tier_one(subjects[i % len(subjects)]),
        "search_facts": lambda i: store.search_facts(subjects[i % len(subjects)], "aisle"),
        "get_facts (thread hop)": lambda i: hop.get_facts(subjects[i % len(subjects)]),
    }
    got = await take_turns(cases, ctx.n)
    base = {name: Row("1 agent read", name, got[name]) for name in ("raw get", "raw tier one",
                                                                   "raw search")}
    rows.extend(base.values())
    for name, against in [("get_facts", "raw get"), ("tier_one", "raw tier one"),
                          ("search_facts", "raw search"), ("get_facts (thread hop)", "raw get")]:
        limit = None if "hop" in name else 2.0
        rows.append(Row("1 agent read", f"DjangoMemoryStore.{name}", got[name],
                        baseline=base[against], target="p50 <= 2x raw" if limit else "(before)",
                        limit=limit))


async def scenario_heavy_search(ctx: Context, rows: list[Row]) -> None:
    store = make_store(native=True)
    heavy = generate.heavy_ids(ctx.preset)

    async def raw_search(i: int) -> object:
        return await (
            await ctx.raw.execute(RAW_SEARCH, [heavy[i % len(heavy)], "%aisle%", "%aisle%"])
        ).fetchall()

    cases = {
        "raw": raw_search,
        "store": lambda i: store.search_facts(heavy[i % len(heavy)], "aisle"),
        "get": lambda i: store.get_facts(heavy[i % len(heavy)]),
    }
    got = await take_turns(cases, max(50, ctx.n // 4))
    base = Row("3 search", "raw search, 500-fact traveller", got["raw"])
    rows.append(base)
    rows.append(Row("3 search", "search_facts, 500-fact traveller", got["store"], baseline=base,
                    target="p50 <= 2x raw", limit=2.0))
    rows.append(Row("3 search", "get_facts, 500-fact traveller", got["get"], baseline=base))


async def scenario_writes(ctx: Context, rows: list[Row]) -> None:

    from memoryadmin.facts import services
    from memoryadmin.facts.actors import Actor
    from memoryadmin_client.types import MemoryFact
    store = make_store(native=True, session_id="bench")
    actor = Actor.agent("bench")
    subjects = ctx.subjects
    keys = ["seat_preference", "bench_meal", "bench_party"]

    def values(i: int, who: str) -> list[str]:
        return [f"{who} value {i} number {n}" for n in range(3)]

    async def raw_upsert(i: int) -> object:
        return await ctx.raw.execute(
            RAW_UPSERT, [subjects[(i + 1) % len(subjects)], keys, values(i, "raw")]
        )

    def service_upsert(i: int) -> object:
        return services.fact_upsert(
            subject_id=subjects[(i + 2) % len(subjects)],
            facts=[services.FactDraft(k, v) for k, v in zip(keys, values(i, "svc"), strict=True)],
            actor=actor,
            reason="saved by the agent",
        )

    async def store_upsert(i: int) -> object:
        return await store.upsert_facts(
            subjects[(i + 3) % len(subjects)],
            [MemoryFact(key=k, value=v) for k, v in zip(keys, values(i, "store"), strict=True)],
        )

    # Deletes: each round deletes a fact that the previous round's upsert created.
    async def raw_delete(i: int) -> object:
        return await ctx.raw.execute(
            "DELETE FROM memory_fact WHERE subject_id = %s AND key = %s",
            [subjects[(i + 1) % len(subjects)], "bench_meal"],
        )

    async def store_delete(i: int) -> object:
        return await store.delete_fact(subjects[(i + 3) % len(subjects)], "bench_meal")

    upserts = await take_turns(
        {"raw": raw_upsert, "service": sync_case(service_upsert), "store": store_upsert}, ctx.n
    )
    base = Row("2 agent write", "raw INSERT .. ON CONFLICT, 3 facts", upserts["raw"])
    rows.append(base)
    rows.append(Row("2 agent write", "fact_upsert, 3 facts (service)", upserts["service"],
                    baseline=base, target="p50 <= 3x raw", limit=3.0))
    rows.append(Row("2 agent write", "DjangoMemoryStore.upsert_facts, 3", upserts["store"],
                    baseline=base, target="p50 <= 3x raw", limit=3.0))

    delete_samples: dict[str, list[float]] = {"raw": [], "store": []}
    n = max(50, ctx.n // 4)
    for i in range(n):
        await raw_upsert(i)
        await store_upsert(i)
        for name, fn in (("raw", raw_delete), ("store", store_delete)):
            start = time.perf_counter()
            await fn(i)
            delete_samples[name].append(time.perf_counter() - start)
    base = Row("2 agent write", "raw DELETE of one fact", delete_samples["raw"])
    rows.append(base)
    rows.append(Row("2 agent write", "DjangoMemoryStore.delete_fact (erase)",
                    delete_samples["store"], baseline=base, target="p50 <= 3x raw", limit=3.0))


class LeanHttp:
    """The benchmark's HTTP client: HTTP/1.1 on one asyncio connection, kept alive when the
    server allows it (reconnecting when it says `Connection: close`), Content-Length bodies
    only (all gunicorn sends for Django's answers). httpx spent 2-4 ms of CPU per request on
    these cores, which the server shares: more than the server's own work, and it hid the
    server's cost. The same client serves every case of the scenario."""

    def __init__(self, host: str, port: int, headers: dict[str, str]) -> None:
        self.host, self.port = host, port
        self._head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": f"{host}:{port}",
                                                          **headers}.items())
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def get(self, path: str) -> bytes:
        return await self.request("GET", path)

    async def request(self, method: str, path: str, body: bytes | None = None) -> bytes:
        extra = ("" if body is None else
                 f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n")
        message = f"{method} {path} HTTP/1.1\r\n{self._head}{extra}\r\n".encode() + (body or b"")
        for attempt in range(2):
            fresh = self._writer is None
            if fresh:
                self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
            try:
                self._writer.write(message)
                head = await self._reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                self.close()
                if fresh or attempt:  # a kept-alive connection the server closed: once more
                    raise
                continue
            return await self._response(head, path)
        raise AssertionError("unreachable")

    async def _response(self, head: bytes, path: str) -> bytes:
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length, close = 0, lines[0].startswith("HTTP/1.0")
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "connection":
                close = value.strip().lower() == "close"
            elif name == "transfer-encoding":
                raise RuntimeError("LeanHttp reads Content-Length bodies only")
        body = await self._reader.readexactly(length)
        if close:
            self.close()
        if status >= 400:
            raise RuntimeError(f"{path}: HTTP {status}: {body[:200]!r}")
        return body

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


async def scenario_http(ctx: Context, rows: list[Row]) -> None:
    import json

    from memoryadmin.api.tokens import token_issue
    from memoryadmin_client.http import HttpMemoryStore

    _, secret = await asyncio.to_thread(_issue_token, token_issue)
    headers = {"Authorization": f"Bearer {secret}"}
    subjects = ctx.subjects

    def lean() -> LeanHttp:
        return LeanHttp("127.0.0.1", HTTP_PORT, headers)

    with gunicorn_server():
        client = lean()
        await _wait_up(client)
        agent_host = HttpMemoryStore(f"http://127.0.0.1:{HTTP_PORT}", secret, timeout=30)
        try:
            async def tier(i: int) -> object:
                return await client.get(f"/api/v1/subjects/{subjects[i % len(subjects)]}/"
                                        "tier-one")

            async def constant(i: int) -> object:
                return await client.get(CONSTANT_PATH)

            async def put3(i: int) -> object:
                body = {"facts": [{"key": k, "value": f"http value {i} {k}"}
                                  for k in ("seat_preference", "bench_meal", "bench_party")]}
                return await client.request(
                    "PUT", f"/api/v1/subjects/{subjects[(i + 5) % len(subjects)]}/facts",
                    json.dumps(body).encode(),
                )

            async def store_tier(i: int) -> object:
                return await agent_host.tier_one(subjects[(i + 3) % len(subjects)])

            async def raw_tier(i: int) -> object:
                return await (
                    await ctx.raw.execute(RAW_TIER_ONE, [subjects[i % len(subjects)]])
                ).fetchall()

            async def raw_upsert(i: int) -> object:
                return await ctx.raw.execute(
                    RAW_UPSERT, [subjects[(i + 7) % len(subjects)],
                                 ["seat_preference", "bench_meal", "bench_party"],
                                 [f"raw {i} {n}" for n in range(3)]]
                )

            got = await take_turns({"tier": tier, "constant": constant, "raw": raw_tier,
                                    "put": put3, "raw_upsert": raw_upsert,
                                    "store_tier": store_tier}, ctx.n)
        finally:
            client.close()
            await agent_host.aclose()
        base = Row("1 agent read (HTTP)", "raw tier-one query", got["raw"])
        rows.append(base)
        rows.append(Row("1 agent read (HTTP)", "GET tier-one, 1 client", got["tier"],
                        baseline=base, target="p50 <= 4x raw", limit=4.0))
        rows.append(Row("1 agent read (HTTP)", "GET constant JSON view, 1 client",
                        got["constant"], baseline=base))
        rows.append(Row("1 agent read (HTTP)", "HttpMemoryStore.tier_one (httpx)",
                        got["store_tier"], baseline=base))
        wbase = Row("2 agent write (HTTP)", "raw INSERT .. ON CONFLICT, 3 facts",
                    got["raw_upsert"])
        rows.append(wbase)
        rows.append(Row("2 agent write (HTTP)", "PUT facts (3), 1 client", got["put"],
                        baseline=wbase))

        # Throughput under 32 concurrent clients (one connection each), the two loads taking
        # turns in short rounds so that the machine's other work hits them alike.
        # The floor: the constant view after one trivial statement on Django's connection, what
        # any read of the database costs a request here (PostgreSQL on the same two cores).
        paths = {"constant": lambda i: CONSTANT_PATH, "floor": lambda i: ONE_QUERY_PATH,
                 "tier": lambda i: f"/api/v1/subjects/{subjects[i % len(subjects)]}/tier-one"}
        done: dict[str, list] = {name: [0.0, []] for name in paths}  # seconds, samples
        rounds = 8  # short rounds, taking turns: the machine's drifts hit every load alike
        for index in range(rounds):
            for name in (list(paths) if index % 2 == 0 else list(reversed(paths))):
                took, samples = await _load(lean, paths[name], ctx.load_seconds / rounds)
                done[name][0] += took
                done[name][1] += samples
        crow = Row("1 agent read (HTTP)", f"constant view, {CLIENTS} clients",
                   done["constant"][1], throughput=len(done["constant"][1]) / done["constant"][0])
        rows.append(crow)
        rows.append(Row("1 agent read (HTTP)", f"floor: constant + SELECT 1, {CLIENTS} clients",
                        done["floor"][1], throughput=len(done["floor"][1]) / done["floor"][0],
                        baseline=crow))
        rows.append(Row("1 agent read (HTTP)", f"GET tier-one, {CLIENTS} clients",
                        done["tier"][1], throughput=len(done["tier"][1]) / done["tier"][0],
                        baseline=crow, target="throughput >= 60% of constant", limit=0.6))


# Under /api/, so that it passes through exactly the middleware the agent API does.
CONSTANT_PATH = "/api/bench/constant"
ONE_QUERY_PATH = "/api/bench/one-query"


def _issue_token(token_issue) -> tuple:
    return token_issue(name="bench", scopes=["memory:read", "memory:write"])


async def _wait_up(client: LeanHttp) -> None:
    for _ in range(100):
        try:
            await client.get(CONSTANT_PATH)
            return
        except OSError:  # not up yet
            client.close()
            await asyncio.sleep(0.2)
    raise RuntimeError("gunicorn did not start")


async def _load(connect: Callable[[], LeanHttp], path_for: Callable[[int], str],
                seconds: float) -> tuple[float, list]:
    """CLIENTS clients, each on its own connection, as fast as answers come back, for about
    `seconds`; returns the seconds it took and the latency of each request."""
    samples: list[float] = []
    counter = iter(range(10**9))
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        client = connect()
        try:
            while time.perf_counter() < deadline:
                start = time.perf_counter()
                await client.get(path_for(next(counter)))
                samples.append(time.perf_counter() - start)
        finally:
            client.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CLIENTS)))
    return time.perf_counter() - started, samples


class gunicorn_server:  # noqa: N801 - used as a context manager
    def __enter__(self) -> None:
        # `make serve`'s own gunicorn.conf.py (2 workers), its access log to /dev/null.
        # As in production, the throttle counts live in Redis (the broker's), shared by workers.
        env = {**os.environ, "DEBUG": "false", "API_THROTTLE_RATE": "100000000/min",
               "CELERY_BROKER_URL": os.environ.get("BENCH_BROKER_URL",
                                                   "redis://127.0.0.1:6379/12"),
               "ALLOWED_HOSTS": "127.0.0.1,localhost", "WEB_CONCURRENCY": "2",
               "BIND": f"127.0.0.1:{HTTP_PORT}", "GUNICORN_ACCESS_LOG": "/dev/null"}
        config = ["-c", "gunicorn.conf.py"] if (ROOT / "gunicorn.conf.py").exists() else [
            "--workers", "2", "--bind", f"127.0.0.1:{HTTP_PORT}"]
        self.proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "gunicorn"), "bench.wsgi:application", *config,
             "--log-level", "warning"],
            cwd=str(ROOT), env=env, start_new_session=True,
        )

    def __exit__(self, *exc: object) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(20)


async def scenario_peers(ctx: Context, rows: list[Row]) -> None:
    """LangGraph's AsyncPostgresStore on the same travellers' facts (its own table, loaded with
    the same rows), the same operations; no audit, no visibility rules."""
    try:
        from langgraph.store.base import PutOp
        from langgraph.store.postgres import AsyncPostgresStore
    except ImportError:
        print("scenario 7: langgraph-checkpoint-postgres not installed (pip install '.[bench]')")
        return
    subjects = ctx.subjects
    async with AsyncPostgresStore.from_conn_string(ctx.conninfo) as peer:
        await peer.setup()
        await ctx.raw.execute("TRUNCATE store")
        await ctx.raw.execute(
            "INSERT INTO store (prefix, key, value, created_at, updated_at)"
            " SELECT 'facts.' || subject_id, key, jsonb_build_object('value', value, 'category',"
            " category), created_at, updated_at FROM memory_fact WHERE subject_id = ANY(%s)",
            [subjects],
        )
        store = make_store(native=True)
        from memoryadmin_client.types import MemoryFact

        async def peer_get(i: int) -> object:
            return await peer.asearch(("facts", subjects[i % len(subjects)]), limit=1000)

        async def peer_put(i: int) -> object:
            ns = ("facts", subjects[(i + 11) % len(subjects)])
            return await peer.abatch([PutOp(ns, k, {"value": f"peer {i} {k}"})
                                      for k in ("seat_preference", "bench_meal", "bench_party")])

        async def ours_get(i: int) -> object:
            return await store.get_facts(subjects[i % len(subjects)])

        async def ours_put(i: int) -> object:
            return await store.upsert_facts(
                subjects[(i + 13) % len(subjects)],
                [MemoryFact(key=k, value=f"ours {i} {k}")
                 for k in ("seat_preference", "bench_meal", "bench_party")],
            )

        async def raw_get(i: int) -> object:
            return await (await ctx.raw.execute(RAW_READ, [subjects[i % len(subjects)]])
                          ).fetchall()

        got = await take_turns({"peer_get": peer_get, "peer_put": peer_put, "ours_get": ours_get,
                                "ours_put": ours_put, "raw_get": raw_get}, ctx.n)
        base = Row("7 peers", "raw get", got["raw_get"])
        rows.append(base)
        rows.append(Row("7 peers", "LangGraph AsyncPostgresStore.asearch", got["peer_get"],
                        baseline=base))
        rows.append(Row("7 peers", "DjangoMemoryStore.get_facts", got["ours_get"],
                        baseline=base))
        put_base = Row("7 peers", "LangGraph abatch 3 puts (no audit)", got["peer_put"])
        rows.append(put_base)
        rows.append(Row("7 peers", "DjangoMemoryStore.upsert_facts 3 (audit)", got["ours_put"],
                        baseline=put_base))


EXTRACTED = [
    {"key": "seat_preference", "value": "Prefers a window seat on night flights",
     "category": "preference"},
    {"key": "bench_meal_note", "value": "Asks for the fruit platter instead of dessert",
     "category": "preference"},
    {"key": "bench_connection", "value": "Wants at least 90 minutes to connect",
     "category": "constraint"},
]
TURN = [
    {"role": "user", "text": "I always take the window on night flights, and please no tight "
                             "connections, 90 minutes at least. Fruit instead of dessert."},
    {"role": "assistant", "text": "Noted: window seat at night, 90-minute connections, fruit."},
]


def scenario_extraction(ctx: Context, rows: list[Row], workers: int = 2) -> None:
    """Per-turn pipeline time with the fake model answering at once (the real anthropic SDK over
    HTTP to tests/extraction/fake_anthropic.py), against fact_upsert of the same 3 facts; then
    turns per second through a real Celery worker (2 processes) on Redis, against the same
    pipeline in one process."""
    from django.conf import settings
    from django.db import connection

    from memoryadmin.extraction import services as extraction_services
    from memoryadmin.extraction.models import FINISHED_STATUSES, ExtractionJob
    from memoryadmin.extraction.runtime import extract_turn
    from memoryadmin.facts import services
    from memoryadmin.facts.actors import Actor
    from tests.extraction.fake_anthropic import FakeAnthropic, tool_use

    broker = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/12")
    subjects = ctx.subjects
    run_id = int(time.time())
    # Values new to this run (a tag of letters: digits could read as an account number), so
    # both sides write every run; with the values of an earlier run already stored, the write
    # was a no-op and extraction's dedup dropped every proposal.
    run_tag = "".join(chr(ord("a") + int(digit)) for digit in str(run_id)[-6:])
    extracted = [{**fact, "value": f"{fact['value']} ({run_tag})"} for fact in EXTRACTED]
    fake = FakeAnthropic().start()
    fake.fallback = tool_use(extracted)
    settings.ANTHROPIC_API_KEY = "bench-fake-key"
    settings.ANTHROPIC_BASE_URL = fake.base_url

    def new_job(index: int) -> int:
        job, _ = extraction_services.job_create_or_get(
            subject_id=subjects[(index * 7 + 3) % len(subjects)],
            session_tag=generate.tag(index),
            turn_id=f"bench-{run_id}-{index}",
            messages=TURN,
            created_by_label="bench",
            skip_reason=None,
        )
        return job.pk

    pipeline: list[float] = []
    write: list[float] = []
    n = max(30, ctx.n // 4)
    for index in range(n + 5):
        job_id = new_job(index)
        start = time.perf_counter()
        extract_turn(job_id)
        took = time.perf_counter() - start
        start = time.perf_counter()
        services.fact_upsert(
            subject_id=subjects[(index * 7 + 5) % len(subjects)],
            facts=[services.FactDraft(f["key"], f["value"] + f" {index}", f["category"])
                   for f in extracted],
            actor=Actor.extraction(), reason="bench", session_tag=generate.tag(index),
        )
        if index >= 5:  # warm-up
            pipeline.append(took)
            write.append(time.perf_counter() - start)
    base = Row("6 extraction", "fact_upsert of the same 3 facts", write)
    rows.append(base)
    rows.append(Row("6 extraction", "pipeline per turn (fake model, at once)", pipeline,
                    baseline=base, target="p50 <= 3x the write", limit=3.0))
    in_process = Row("6 extraction", "turns/s, pipeline in one process", pipeline,
                     throughput=len(pipeline) / sum(pipeline))
    rows.append(in_process)

    # Through Celery: enqueue a batch, time until every job has finished.
    env = {**os.environ, "CELERY_BROKER_URL": broker, "ANTHROPIC_API_KEY": "bench-fake-key",
           "ANTHROPIC_BASE_URL": fake.base_url, "DEBUG": "false"}
    log = open(os.devnull, "wb")  # noqa: SIM115 - closed below
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "memoryadmin", "worker", f"--concurrency={workers}",
         "--loglevel=WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat",
         f"--hostname=bench-{os.getpid()}@%h"],
        cwd=str(ROOT), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        from memoryadmin.celery import app as celery_app

        celery_app.conf.update(broker_url=broker, task_always_eager=False)
        celery_app._pool = None
        warm = [new_job(10_000 + i) for i in range(4)]  # the worker is up when these finish
        for job_id in warm:
            extraction_services.job_enqueue(job_id)
        _wait_jobs(ExtractionJob, FINISHED_STATUSES, warm, timeout=120)
        batch = [new_job(20_000 + i) for i in range(max(40, n))]
        start = time.perf_counter()
        for job_id in batch:
            extraction_services.job_enqueue(job_id)
        _wait_jobs(ExtractionJob, FINISHED_STATUSES, batch, timeout=600)
        seconds = time.perf_counter() - start
        failed = ExtractionJob.objects.filter(pk__in=batch, status="failed").count()
        rows.append(Row("6 extraction", f"turns/s, Celery worker ({workers} processes)",
                        [seconds / len(batch)], throughput=len(batch) / seconds,
                        baseline=in_process, target=f"({failed} failed)" if failed else ""))
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(30)
        log.close()
        fake.stop()
        connection.close()


def scenario_pages(ctx: Context, rows: list[Row]) -> None:
    """Server-rendered pages at 10 and at 500 facts: render time (in-process, Django's test
    client, the whole middleware stack) and SQL statements per page."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    small, heavy = ctx.subjects[0], generate.heavy_ids(ctx.preset)[0]
    n = max(20, ctx.n // 10)

    def measure(client: Client, path: str) -> tuple[list[float], int]:
        samples = []
        for index in range(n + 3):
            start = time.perf_counter()
            response = client.get(path)
            took = time.perf_counter() - start
            if response.status_code != 200:
                where = response.get("Location", "")
                raise RuntimeError(f"{path}: HTTP {response.status_code} {where}".rstrip())
            if index >= 3:
                samples.append(took)
        counts = []
        for _ in range(2):  # the lower of two: one may land on the 5-second settings re-read
            with CaptureQueriesContext(connection) as queries:
                client.get(path)
            counts.append(len(queries))
        return samples, min(counts)

    pages: list[tuple[str, Callable[[str], tuple[Client, str]]]] = []
    try:
        from memoryadmin.portal.services import portal_link_issue

        def portal_page(subject: str) -> tuple[Client, str]:
            client = Client()
            link = portal_link_issue(subject_id=subject, issued_by="bench")
            client.get(f"/portal/open/{link.secret}")
            return client, "/portal/"

        pages.append(("portal page", portal_page))
    except (ImportError, RuntimeError):  # RuntimeError: installed, but not an app here
        print("scenario 5: no traveller portal in this checkout")
    staff = _staff_pages()
    pages.extend(staff)
    if not staff:
        print("scenario 5: no staff traveller page / timeline in this checkout")
    for name, opener in pages:
        base_samples, base_queries = measure(*opener(small))
        big_samples, big_queries = measure(*opener(heavy))
        base = Row("5 pages", f"{name}, 10 facts ({base_queries} queries)", base_samples)
        rows.append(base)
        rows.append(Row("5 pages", f"{name}, 500 facts ({big_queries} queries)", big_samples,
                        baseline=base, target="<= 3x the 10-fact page, same queries"
                        if big_queries == base_queries else
                        f"QUERIES DIFFER ({base_queries} vs {big_queries})", limit=3.0))


def _staff_pages() -> list[tuple[str, Callable[[str], tuple[object, str]]]]:
    """The staff traveller page and timeline, when this checkout has them (issue 8)."""
    from django.urls import NoReverseMatch, reverse

    found = []
    for label, names in (("staff traveller page", ("staff:traveller", "staff:subject")),
                         ("staff timeline", ("staff:timeline", "staff:subject-timeline"))):
        for name in names:
            try:
                reverse(name, args=["x"])
            except NoReverseMatch:
                continue

            def opener(subject: str, name: str = name) -> tuple[object, str]:
                from django.contrib.auth import get_user_model
                from django.contrib.auth.models import Group
                from django.test import Client

                user, _ = get_user_model().objects.get_or_create(
                    username="bench-editor", defaults={"is_staff": True}
                )
                # An editor sees every traveller page; a privacy admin would first be sent to
                # the TOTP step, which is not what this scenario measures.
                user.groups.set(Group.objects.filter(name="editor"))
                client = Client()
                client.force_login(user)
                return client, reverse(name, args=[subject])

            found.append((label, opener))
            break
    return found


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
    rows.append(Row("4 sweep", f"floor: INSERT of {count:,} erasure events alone", [floor],
                    throughput=count / floor, baseline=base))
    rows.append(Row("4 sweep", f"facts_sweep_expired: {erased:,} erased, redaction incl.",
                    [swept], throughput=erased / swept, baseline=base,
                    target="facts/s >= 20% of the raw DELETE (<= 5x)", limit=0.2))


def _wait_jobs(model, finished, ids: list[int], *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if model.objects.filter(pk__in=ids, status__in=list(finished)).count() == len(ids):
            return
        time.sleep(0.05)
    raise RuntimeError("extraction jobs did not finish in time")


# --- driver -------------------------------------------------------------------------------------


@dataclass
class Context:
    conninfo: str
    preset: generate.Preset
    n: int
    load_seconds: float
    raw: object = None
    subjects: list[str] = field(default_factory=list)


def print_table(rows: list[Row], title: str) -> None:
    print(f"\n{title}")
    header = (f"| {'scenario':<22} | {'operation':<40} | {'p50 ms':>8} | {'p99 ms':>8} | "
              f"{'ops/s':>8} | {'x base':>7} | target |")
    print(header)
    print("|" + "|".join("-" * (len(part)) for part in header.split("|")[1:-1]) + "|")
    for row in rows:
        ratio = row.ratio
        verdict = ""
        if row.limit is not None and ratio is not None:
            ok = ratio >= row.limit if row.throughput is not None else ratio <= row.limit
            verdict = f"{'met' if ok else 'MISSED'}: {row.target}"
        elif row.target:
            verdict = row.target
        ratio_text = "" if ratio is None else (
            f"{ratio * 100:5.0f}%" if row.throughput is not None else f"{ratio:6.2f}x")
        print(f"| {row.scenario:<22} | {row.operation:<40} | {row.p50 * 1e3:8.3f} | "
              f"{row.p(0.99) * 1e3:8.3f} | {row.ops:8.0f} | {ratio_text:>7} | {verdict} |")


async def run_async(ctx: Context, only: set[str]) -> list[Row]:
    import psycopg

    rows: list[Row] = []
    ctx.raw = await psycopg.AsyncConnection.connect(ctx.conninfo, autocommit=True)
    try:
        if "1" in only:
            await scenario_reads(ctx, rows)
        if "3" in only:
            await scenario_heavy_search(ctx, rows)
        if "2" in only:
            await scenario_writes(ctx, rows)
        if "http" in only:
            await scenario_http(ctx, rows)
        if "7" in only:
            await scenario_peers(ctx, rows)
    finally:
        from memoryadmin.facts import store

        if hasattr(store, "close_pools"):
            await store.close_pools()
        await ctx.raw.close()
    return rows


def ensure_database(conninfo: str) -> None:
    """Create the benchmark database if it does not exist (never the one you work in)."""
    import psycopg
    from psycopg import sql

    info = psycopg.conninfo.conninfo_to_dict(conninfo)
    name = info.get("dbname")
    try:
        psycopg.connect(conninfo).close()
    except psycopg.OperationalError:
        with psycopg.connect(**{**info, "dbname": "postgres"}, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(generate.PRESETS), default="small")
    parser.add_argument("--n", type=int, default=400, help="calls per case")
    parser.add_argument("--load-seconds", type=float, default=8.0)
    parser.add_argument("--skip-load", action="store_true", help="reuse the loaded data")
    parser.add_argument("--only", default="1,2,3,http,5,6,7,4")
    args = parser.parse_args()
    conninfo = generate.conninfo_from_env()
    ensure_database(conninfo)
    os.environ["MEMORY_STORE_NATIVE_ASYNC"] = "true"
    # The service baseline is called from the event loop on purpose (turn-taking), in sync.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    os.environ.setdefault("LOG_LEVEL", "WARNING")  # no per-job log lines in the table
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # as `make serve` does
    preset = generate.PRESETS[args.preset]
    if not args.skip_load:
        loaded = generate.load(conninfo, preset)
        print(f"loaded {loaded['facts']:,} facts, {loaded['events']:,} events in "
              f"{loaded['seconds']:.0f} s")
    ctx = Context(conninfo=conninfo, preset=preset, n=args.n, load_seconds=args.load_seconds)
    rng = random.Random(7)
    normal = preset.travellers - preset.heavy
    ctx.subjects = [generate.normal_id(rng.randrange(normal)) for _ in range(2000)]
    started = time.perf_counter()
    only = set(args.only.split(","))
    rows = asyncio.run(run_async(ctx, only))
    for name, scenario in (("5", scenario_pages), ("6", scenario_extraction),
                           ("4", scenario_sweep)):  # the sweep last: it erases every fact
        if name in only:
            try:
                scenario(ctx, rows)
            except Exception as exc:  # noqa: BLE001 - report, and still print the table
                print(f"scenario {name} failed: {type(exc).__name__}: {exc}")
    print_table(rows, f"preset {args.preset}: {preset.travellers:,} travellers, "
                      f"{preset.facts:,} facts; {os.cpu_count()} cores; "
                      f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
                      f"scenarios took {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
