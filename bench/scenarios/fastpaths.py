"""Scenario `fastpaths`: each fenced speed trick (memoryadmin/fastpaths/) on against off, in the
same run, the cases taking turns call by call.

In-process, the setting is flipped before each call (they are read on every call):
FASTPATH_DJANGO_CURSOR on the read and the upsert through Django's connection. Over HTTP one
gunicorn (1 worker each, so only the one answering uses a core) per configuration: every trick
on, twice (A and A', the noise of this run), and each of FASTPATH_DJANGO_CURSOR,
FASTPATH_API_LEAN_GET off. (The pydantic and CSP tricks measured here
bought less than the noise and were removed: bench/RESULTS.md.) Each row's ratio is against
the same operation with every trick on; the "on again" rows are what noise alone gives.

A whole run of any other scenario with a trick off: set its environment variable, e.g.
`FASTPATH_API_LEAN_GET=false bench/run.py --only http --skip-load`."""

from __future__ import annotations

import asyncio
import json
from contextlib import ExitStack

from django.conf import settings

from bench.harness import (
    HTTP_PORT,
    WRITE_KEYS,
    Context,
    LeanHttp,
    Row,
    gunicorn_server,
    make_store,
    take_turns,
)

SCENARIO = "fenced speed tricks"
HTTP_OFF = (
    "FASTPATH_DJANGO_CURSOR",
    "FASTPATH_API_LEAN_GET",
)


def _with(name: str | None, call):
    """`call(i)` with the trick `name` off (None: every trick on)."""

    async def case(i: int) -> object:
        settings.FASTPATH_DJANGO_CURSOR = name != "FASTPATH_DJANGO_CURSOR"
        return await call(i)

    return case


async def scenario_fastpaths(ctx: Context, rows: list[Row]) -> None:
    from memoryadmin.api.tokens import token_issue

    await _in_process(ctx, rows)
    _, secret = await asyncio.to_thread(
        token_issue, name="bench-fastpaths", scopes=["memory:read", "memory:write"]
    )
    await _http(ctx, rows, secret)


async def _in_process(ctx: Context, rows: list[Row]) -> None:
    subjects = ctx.subjects
    hop = make_store(native=False)

    def hop_read(i: int):
        return hop.get_facts(subjects[i % len(subjects)])

    def hop_write(i: int):
        from memoryadmin_client.types import MemoryCategory, MemoryFact

        facts = [
            MemoryFact(key=k, value=f"fast {i} {k}", category=MemoryCategory.PREFERENCE)
            for k in WRITE_KEYS
        ]
        return hop.upsert_facts(subjects[(i + 11) % len(subjects)], facts)

    measured = {
        "DjangoMemoryStore.get_facts (thread hop)": (hop_read, "FASTPATH_DJANGO_CURSOR"),
        "DjangoMemoryStore.upsert_facts (3, thread hop)": (hop_write, "FASTPATH_DJANGO_CURSOR"),
    }
    cases = {}
    for operation, (call, trick) in measured.items():
        cases[(operation, "on")] = _with(None, call)
        cases[(operation, "on again")] = _with(None, call)
        cases[(operation, f"{trick} off")] = _with(trick, call)
    try:
        got = await take_turns(cases, ctx.n)
    finally:
        settings.FASTPATH_DJANGO_CURSOR = True
    _rows(rows, got, [(op, ["on again", f"{trick} off"]) for op, (_, trick) in measured.items()])


async def _http(ctx: Context, rows: list[Row], secret: str) -> None:
    configurations = {"on": {}, "on again": {}} | {
        f"{name} off": {name: "false"} for name in HTTP_OFF
    }
    headers = {"Authorization": f"Bearer {secret}"}
    subjects = ctx.subjects
    clients: dict[str, LeanHttp] = {}
    with ExitStack() as servers:
        for offset, (label, env) in enumerate(configurations.items()):
            port = HTTP_PORT + 10 + offset
            servers.enter_context(gunicorn_server(port, {**env, "WEB_CONCURRENCY": "1"}))
            clients[label] = LeanHttp("127.0.0.1", port, headers)
        try:
            for client in clients.values():
                await _wait_up(client)
            cases = {}
            for label, client in clients.items():
                cases[("GET tier-one", label)] = _tier(client, subjects)
                cases[("GET facts", label)] = _facts(client, subjects)
                cases[("PUT facts (3)", label)] = _put(client, subjects)
            got = await take_turns(cases, ctx.n)
        finally:
            for client in clients.values():
                client.close()
    others = [label for label in configurations if label != "on"]
    _rows(rows, got, [(op, others) for op in ("GET tier-one", "GET facts", "PUT facts (3)")])


def _tier(client: LeanHttp, subjects: list[str]):
    async def call(i: int) -> object:
        return await client.get(f"/api/v1/subjects/{subjects[i % len(subjects)]}/tier-one")

    return call


def _facts(client: LeanHttp, subjects: list[str]):
    async def call(i: int) -> object:
        return await client.get(f"/api/v1/subjects/{subjects[(i + 1) % len(subjects)]}/facts")

    return call


def _put(client: LeanHttp, subjects: list[str]):
    async def call(i: int) -> object:
        body = {"facts": [{"key": k, "value": f"fast http {i} {k}"} for k in WRITE_KEYS]}
        path = f"/api/v1/subjects/{subjects[(i + 5) % len(subjects)]}/facts"
        return await client.request("PUT", path, json.dumps(body).encode())

    return call


async def _wait_up(client: LeanHttp) -> None:
    for _ in range(150):
        try:
            await client.get("/healthz")
            return
        except OSError:  # not up yet
            client.close()
            await asyncio.sleep(0.2)
    raise RuntimeError("gunicorn did not start")


def _rows(rows: list[Row], got: dict, plan: list[tuple[str, list[str]]]) -> None:
    for operation, labels in plan:
        base = Row(SCENARIO, f"{operation}, on", got[(operation, "on")])
        rows.append(base)
        for label in labels:
            rows.append(
                Row(
                    SCENARIO,
                    f"{operation}, {label}",
                    got[(operation, label)],
                    baseline=base,
                    target="noise" if label == "on again" else "",
                )
            )
