"""Scenario 7, peers: LangGraph's store on the same facts, the same operations."""

from __future__ import annotations

from bench.harness import WRITE_KEYS, Context, Row, make_store, take_turns
from bench.scenarios.raw import RAW_READ


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
            return await peer.abatch([PutOp(ns, k, {"value": f"peer {i} {k}"}) for k in WRITE_KEYS])

        async def ours_get(i: int) -> object:
            return await store.get_facts(subjects[i % len(subjects)])

        async def ours_put(i: int) -> object:
            return await store.upsert_facts(
                subjects[(i + 13) % len(subjects)],
                [MemoryFact(key=k, value=f"ours {i} {k}") for k in WRITE_KEYS],
            )

        # Deletes: each call removes one item made for it beforehand, ours with its history (a
        # created event, so the erasure has something to redact), theirs with a put.
        made = max(3, ctx.n // 20) + ctx.n
        gone = [(subjects[j % len(subjects)], f"bench_gone_{j}") for j in range(made)]
        for subject, key in gone:
            await peer.aput(("facts", subject), key, {"value": f"peer {key}"})
            await store.upsert_facts(subject, [MemoryFact(key=key, value=f"ours {key}")])
        peer_gone, ours_gone = iter(gone), iter(gone)

        async def peer_delete(i: int) -> object:
            subject, key = next(peer_gone)
            return await peer.adelete(("facts", subject), key)

        async def ours_delete(i: int) -> object:
            subject, key = next(ours_gone)
            assert await store.delete_fact(subject, key), key
            return None

        async def raw_get(i: int) -> object:
            return await (await ctx.raw.execute(RAW_READ, [subjects[i % len(subjects)]])).fetchall()

        got = await take_turns(
            {
                "peer_get": peer_get,
                "peer_put": peer_put,
                "ours_get": ours_get,
                "ours_put": ours_put,
                "raw_get": raw_get,
                "peer_delete": peer_delete,
                "ours_delete": ours_delete,
            },
            ctx.n,
        )
        base = Row("7 peers", "raw get", got["raw_get"])
        rows.append(base)
        rows.append(
            Row("7 peers", "LangGraph AsyncPostgresStore.asearch", got["peer_get"], baseline=base)
        )
        rows.append(Row("7 peers", "DjangoMemoryStore.get_facts", got["ours_get"], baseline=base))
        put_base = Row("7 peers", "LangGraph abatch 3 puts (no audit)", got["peer_put"])
        rows.append(put_base)
        rows.append(
            Row(
                "7 peers",
                "DjangoMemoryStore.upsert_facts 3 (audit)",
                got["ours_put"],
                baseline=put_base,
            )
        )
        delete_base = Row("7 peers", "LangGraph adelete of one item", got["peer_delete"])
        rows.append(delete_base)
        rows.append(
            Row(
                "7 peers",
                "DjangoMemoryStore.delete_fact (erasure)",
                got["ours_delete"],
                baseline=delete_base,
            )
        )
