"""What every scenario of bench/run.py shares: the rows of the table and its printing, calls
taking turns, the store under test, and the HTTP pieces (the LeanHttp client, gunicorn)."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import statistics
import string
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench import generate

ROOT = Path(__file__).resolve().parent.parent
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


@dataclass
class Context:
    conninfo: str
    preset: generate.Preset
    n: int
    load_seconds: float
    raw: object = None
    subjects: list[str] = field(default_factory=list)


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


# The travellers the profiles of one call (bench/*_profile.py, delete_floor.py) write to.
SQL_PROFILE_SUBJECTS = "SELECT subject_id FROM memory_subject ORDER BY subject_id LIMIT 200"


def profile_subjects() -> list[str]:
    """The first 200 travellers of a database `bench/run.py` loaded (Django's connection)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(SQL_PROFILE_SUBJECTS)
        subjects = [row[0] for row in cursor.fetchall()]
    if not subjects:
        raise SystemExit("no travellers: load the database with bench/run.py first")
    return subjects


def letters(length: int = 6) -> str:
    """A run's own tag for the keys it makes. Letters only: a key with a run of digits looks
    like a card or phone number to the write filter, which refuses it."""
    return "".join(random.choice(string.ascii_lowercase) for _ in range(length))


async def facts_to_delete(
    cases: list[str],
    subjects: list[str],
    count: int,
    *,
    store: object,
    peer: object,
    peer_case: str,
    tag: str,
) -> dict[str, Iterator[tuple[str, str]]]:
    """`count` facts made for each case to delete, (subject, key) each: LangGraph's put for
    `peer_case`, the store's upsert (with its created event, so the erasure has history to
    blank) for every other case."""
    from memoryadmin_client.types import MemoryFact

    made = {}
    for letter, name in zip(string.ascii_lowercase, cases, strict=False):
        facts = [(subjects[j % len(subjects)], f"{tag}_{letter}_{j}") for j in range(count)]
        for subject, key in facts:
            if name == peer_case:
                await peer.aput(("facts", subject), key, {"value": f"peer {key}"})
            else:
                await store.upsert_facts(subject, [MemoryFact(key=key, value=f"Zq8 {key}")])
        made[name] = iter(facts)
    return made


async def turns_with_cpu(
    cases: dict[str, Callable[..., Awaitable[object]]], made: dict, n: int, warm: int
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Each case called with the next of its own `made` arguments, `warm` rounds unmeasured,
    then n rounds in a shuffled order: wall seconds per call and client CPU seconds in all."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, float] = dict.fromkeys(cases, 0.0)
    order = list(cases)
    for _ in range(warm):
        for name in order:
            await cases[name](*next(made[name]))
    for _ in range(n):
        random.shuffle(order)
        for name in order:
            args = next(made[name])
            start, start_cpu = time.perf_counter(), time.process_time()
            await cases[name](*args)
            samples[name].append(time.perf_counter() - start)
            cpu[name] += time.process_time() - start_cpu
    return samples, cpu


def print_cpu_table(
    samples: dict[str, list[float]], cpu: dict[str, float], n: int, base: str, label: str
) -> None:
    """p50, p99, the ratio to case `base` at p50 (headed `label`) and client CPU, in ms."""
    floor = statistics.median(samples[base])
    print(f"| case | p50 | p99 | {label} | client CPU |")
    print("|---|---|---|---|---|")
    for name, got in samples.items():
        ordered = sorted(got)
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        median = statistics.median(got)
        print(
            f"| {name} | {median * 1000:.3f} | {p99 * 1000:.3f} | {median / floor:.2f}x "
            f"| {cpu[name] / n * 1000:.3f} |"
        )


def sync_case(fn: Callable[[int], object]) -> Callable[[int], Awaitable[object]]:
    async def call(index: int) -> object:
        return fn(index)

    return call


# The three facts every write case sends (one already stored per traveller, two bench-only).
WRITE_KEYS = ("seat_preference", "bench_meal", "bench_party")


def make_store(*, native: bool, **kwargs: object) -> object:
    """DjangoMemoryStore on its native async path (or Django's thread when native=False). An
    older checkout without the native path (a "before" run) gets its only path."""
    from memoryadmin.facts.store import DjangoMemoryStore

    try:
        return DjangoMemoryStore(native=native, **kwargs)
    except TypeError:
        return DjangoMemoryStore(**kwargs)


def print_table(rows: list[Row], title: str) -> None:
    print(f"\n{title}")
    header = (
        f"| {'scenario':<22} | {'operation':<40} | {'p50 ms':>8} | {'p99 ms':>8} | "
        f"{'ops/s':>8} | {'x base':>7} | target |"
    )
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
        ratio_text = (
            ""
            if ratio is None
            else (f"{ratio * 100:5.0f}%" if row.throughput is not None else f"{ratio:6.2f}x")
        )
        print(
            f"| {row.scenario:<22} | {row.operation:<40} | {row.p50 * 1e3:8.3f} | "
            f"{row.p(0.99) * 1e3:8.3f} | {row.ops:8.0f} | {ratio_text:>7} | {verdict} |"
        )


class LeanHttp:
    """The benchmark's HTTP client: HTTP/1.1 on one asyncio connection, kept alive when the
    server allows it (reconnecting when it says `Connection: close`), Content-Length bodies
    only (all gunicorn sends for Django's answers). httpx spent 2-4 ms of CPU per request on
    these cores, which the server shares: more than the server's own work, and it hid the
    server's cost. The same client serves every case of the scenario."""

    def __init__(self, host: str, port: int, headers: dict[str, str]) -> None:
        self.host, self.port = host, port
        self._head = "".join(
            f"{k}: {v}\r\n" for k, v in {"Host": f"{host}:{port}", **headers}.items()
        )
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def get(self, path: str) -> bytes:
        return await self.request("GET", path)

    async def request(self, method: str, path: str, body: bytes | None = None) -> bytes:
        extra = (
            ""
            if body is None
            else f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        )
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


class gunicorn_server:  # noqa: N801 - used as a context manager
    """`make serve`'s gunicorn on HTTP_PORT; `port` and `env` (e.g. a FASTPATH_* setting off,
    WEB_CONCURRENCY) for a second server in the same run."""

    def __init__(self, port: int | None = None, env: dict[str, str] | None = None) -> None:
        self.port = port or HTTP_PORT
        self.env = env or {}

    def __enter__(self) -> None:
        # `make serve`'s own gunicorn.conf.py (2 workers), its access log to /dev/null.
        # As in production, the throttle counts live in Redis (the broker's), shared by workers.
        env = {
            **os.environ,
            "DEBUG": "false",
            "API_THROTTLE_RATE": "100000000/min",
            "CELERY_BROKER_URL": os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/12"),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "WEB_CONCURRENCY": "2",
            "BIND": f"127.0.0.1:{self.port}",
            "GUNICORN_ACCESS_LOG": "/dev/null",
            **self.env,
        }
        config = (
            ["-c", "gunicorn.conf.py"]
            if (ROOT / "gunicorn.conf.py").exists()
            else ["--workers", env["WEB_CONCURRENCY"], "--bind", f"127.0.0.1:{self.port}"]
        )
        self.proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                "bench.wsgi:application",
                *config,
                "--log-level",
                "warning",
            ],
            cwd=str(ROOT),
            env=env,
            start_new_session=True,
        )

    def __exit__(self, *exc: object) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(20)
