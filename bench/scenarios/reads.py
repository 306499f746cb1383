"""Scenario 1, the agent's reads: in-process `DjangoMemoryStore` against raw SQL, and (`http`)
the API served by gunicorn, one client and 32, with the agent write over HTTP alongside."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from bench.harness import (
    CLIENTS,
    HTTP_PORT,
    WRITE_KEYS,
    Context,
    LeanHttp,
    Row,
    gunicorn_server,
    make_store,
    take_turns,
)
from bench.scenarios.raw import RAW_READ, RAW_SEARCH, RAW_TIER_ONE, RAW_UPSERT


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
    base = {
        name: Row("1 agent read", name, got[name])
        for name in ("raw get", "raw tier one", "raw search")
    }
    rows.extend(base.values())
    for name, against in [
        ("get_facts", "raw get"),
        ("tier_one", "raw tier one"),
        ("search_facts", "raw search"),
        ("get_facts (thread hop)", "raw get"),
    ]:
        limit = None if "hop" in name else 2.0
        rows.append(
            Row(
                "1 agent read",
                f"DjangoMemoryStore.{name}",
                got[name],
                baseline=base[against],
                target="p50 <= 2x raw" if limit else "(before)",
                limit=limit,
            )
        )


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
                return await client.get(f"/api/v1/subjects/{subjects[i % len(subjects)]}/tier-one")

            async def unrecorded(i: int) -> object:
                return await client.get(
                    f"{UNRECORDED_PREFIX}/subjects/{subjects[i % len(subjects)]}/tier-one"
                )

            async def constant(i: int) -> object:
                return await client.get(CONSTANT_PATH)

            async def put3(i: int) -> object:
                body = {"facts": [{"key": k, "value": f"http value {i} {k}"} for k in WRITE_KEYS]}
                return await client.request(
                    "PUT",
                    f"/api/v1/subjects/{subjects[(i + 5) % len(subjects)]}/facts",
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
                    RAW_UPSERT,
                    [
                        subjects[(i + 7) % len(subjects)],
                        list(WRITE_KEYS),
                        [f"raw {i} {n}" for n in range(3)],
                    ],
                )

            got = await take_turns(
                {
                    "tier": tier,
                    "unrecorded": unrecorded,
                    "constant": constant,
                    "raw": raw_tier,
                    "put": put3,
                    "raw_upsert": raw_upsert,
                    "store_tier": store_tier,
                },
                ctx.n,
            )
        finally:
            client.close()
            await agent_host.aclose()
        base = Row("1 agent read (HTTP)", "raw tier-one query", got["raw"])
        rows.append(base)
        rows.append(
            Row(
                "1 agent read (HTTP)",
                "GET tier-one, 1 client",
                got["tier"],
                baseline=base,
                target="p50 <= 4x raw",
                limit=4.0,
            )
        )
        # What recording the request in the metrics costs tier one: the same view, the same
        # middleware, only not under /api/v1/ (so not observed), taking turns with it.
        unrecorded_row = Row(
            "1 agent read (HTTP)",
            "GET tier-one, not recorded in metrics",
            got["unrecorded"],
            baseline=base,
        )
        rows.append(unrecorded_row)
        rows.append(
            Row(
                "1 agent read (HTTP)",
                "GET tier-one vs not recorded",
                got["tier"],
                baseline=unrecorded_row,
                target="within noise (<= 1.1x)",
                limit=1.1,
            )
        )
        rows.append(
            Row(
                "1 agent read (HTTP)",
                "GET constant JSON view, 1 client",
                got["constant"],
                baseline=base,
            )
        )
        rows.append(
            Row(
                "1 agent read (HTTP)",
                "HttpMemoryStore.tier_one (httpx)",
                got["store_tier"],
                baseline=base,
            )
        )
        wbase = Row("2 agent write (HTTP)", "raw INSERT .. ON CONFLICT, 3 facts", got["raw_upsert"])
        rows.append(wbase)
        rows.append(
            Row("2 agent write (HTTP)", "PUT facts (3), 1 client", got["put"], baseline=wbase)
        )

        # Throughput under 32 concurrent clients (one connection each), the two loads taking
        # turns in short rounds so that the machine's other work hits them alike.
        # The floor: the constant view after one trivial statement on Django's connection, what
        # any read of the database costs a request here (PostgreSQL on the same two cores).
        paths = {
            "constant": lambda i: CONSTANT_PATH,
            "floor": lambda i: ONE_QUERY_PATH,
            "tier": lambda i: f"/api/v1/subjects/{subjects[i % len(subjects)]}/tier-one",
        }
        done: dict[str, list] = {name: [0.0, []] for name in paths}  # seconds, samples
        rounds = 8  # short rounds, taking turns: the machine's drifts hit every load alike
        for index in range(rounds):
            for name in list(paths) if index % 2 == 0 else list(reversed(paths)):
                took, samples = await _load(lean, paths[name], ctx.load_seconds / rounds)
                done[name][0] += took
                done[name][1] += samples
        crow = Row(
            "1 agent read (HTTP)",
            f"constant view, {CLIENTS} clients",
            done["constant"][1],
            throughput=len(done["constant"][1]) / done["constant"][0],
        )
        rows.append(crow)
        rows.append(
            Row(
                "1 agent read (HTTP)",
                f"floor: constant + SELECT 1, {CLIENTS} clients",
                done["floor"][1],
                throughput=len(done["floor"][1]) / done["floor"][0],
                baseline=crow,
            )
        )
        rows.append(
            Row(
                "1 agent read (HTTP)",
                f"GET tier-one, {CLIENTS} clients",
                done["tier"][1],
                throughput=len(done["tier"][1]) / done["tier"][0],
                baseline=crow,
                target="throughput >= 60% of constant",
                limit=0.6,
            )
        )


# Under /api/, so that it passes through exactly the middleware the agent API does.
CONSTANT_PATH = "/api/bench/constant"
UNRECORDED_PREFIX = "/api/bench/unrecorded"
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


async def _load(
    connect: Callable[[], LeanHttp], path_for: Callable[[int], str], seconds: float
) -> tuple[float, list]:
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
