"""Scenario 3, search on the heavy travellers (500 facts each) against raw SQL."""

from __future__ import annotations

from bench import generate
from bench.harness import Context, Row, make_store, take_turns
from bench.scenarios.raw import RAW_SEARCH


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
    rows.append(
        Row(
            "3 search",
            "search_facts, 500-fact traveller",
            got["store"],
            baseline=base,
            target="p50 <= 2x raw",
            limit=2.0,
        )
    )
    rows.append(Row("3 search", "get_facts, 500-fact traveller", got["get"], baseline=base))
