"""Scenario 2, the agent's writes: upsert of 3 facts (service and store) and delete, against
raw SQL."""

from __future__ import annotations

import time

from bench.harness import WRITE_KEYS, Context, Row, make_store, sync_case, take_turns
from bench.scenarios.raw import RAW_UPSERT


async def scenario_writes(ctx: Context, rows: list[Row]) -> None:

    from memoryadmin.facts import services
    from memoryadmin.facts.actors import Actor
    from memoryadmin_client.types import MemoryFact

    store = make_store(native=True, session_id="bench")
    actor = Actor.agent("bench")
    subjects = ctx.subjects
    keys = list(WRITE_KEYS)

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
    rows.append(
        Row(
            "2 agent write",
            "fact_upsert, 3 facts (service)",
            upserts["service"],
            baseline=base,
            target="p50 <= 3x raw",
            limit=3.0,
        )
    )
    rows.append(
        Row(
            "2 agent write",
            "DjangoMemoryStore.upsert_facts, 3",
            upserts["store"],
            baseline=base,
            target="p50 <= 3x raw",
            limit=3.0,
        )
    )

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
    rows.append(
        Row(
            "2 agent write",
            "DjangoMemoryStore.delete_fact (erase)",
            delete_samples["store"],
            baseline=base,
            target="p50 <= 3x raw",
            limit=3.0,
        )
    )
