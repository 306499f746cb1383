"""Scenario 7, peers (issue 42): the agent's calls on DjangoMemoryStore, on LangGraph's store and
as one raw psycopg statement, the same travellers, calls interleaved in the same run.

Reads: get (a traveller's facts), tier one (what every turn injects) and search (recall on
demand), each against its raw statement (`raw.py`: one statement on the bare table, no
visibility rules beyond status and expiry) and against LangGraph's `AsyncPostgresStore`. Writes:
an upsert of 3 against LangGraph's batch of 3 puts (no audit), a delete with erasure against
LangGraph's delete. Each row prints p50 and p99; the ratio is to its baseline's p50, and the
"vs LangGraph" rows repeat our call against LangGraph's.

LangGraph's tier one is `asearch(namespace, limit=cap)` (newest first: its only order); it has
no text search without an embedding index, so its search is the namespace read and the same
terms matched in Python (what an agent on it would do).

`BENCH_PEERS_CASES=peer_delete,ours_delete` (the names given to `take_turns` below) runs only
those cases in the turns and prints the rows they make: what runs between two calls changes what
each costs (RESULTS.md, "Issue 42, fourth session"). `BENCH_PEERS_PARTS=1` (or `store`) adds
the store's delete cut into its parts (`bench/erasure_parts.py`, cases `part_1` to `part_4`),
each against LangGraph's delete in the same turns as every other call.
"""

from __future__ import annotations

import os
import random
import string

from bench.harness import WRITE_KEYS, Context, Row, make_store, take_turns
from bench.scenarios.raw import RAW_READ, RAW_SEARCH_PEERS, RAW_TIER_ONE

# A word in the key or the values of one topic of every traveller (seat_preference: "aisle
# seats", "window seats"), so each search finds a row or two of ten.
SEARCH_QUERY = "seat"
TIER_ONE_CAP = 8  # MemorySettings.tier_one_cap's default
DELETE_TARGET = "p50 <= 1.5x LangGraph"


async def scenario_peers(ctx: Context, rows: list[Row]) -> None:
    """LangGraph's AsyncPostgresStore on the same travellers' facts (its own table, loaded with
    the same rows), the same operations; no audit, no visibility rules."""
    from bench import erasure_parts  # Django's models: imported once Django is set up

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
        await ctx.raw.execute("ANALYZE store")
        store = make_store(native=True)
        from memoryadmin_client.types import MemoryFact

        def subject(i: int) -> str:
            return subjects[i % len(subjects)]

        # --- reads -------------------------------------------------------------------------
        async def peer_get(i: int) -> object:
            return await peer.asearch(("facts", subject(i)), limit=1000)

        async def peer_tier_one(i: int) -> object:
            return await peer.asearch(("facts", subject(i)), limit=TIER_ONE_CAP)

        def matches(item: object, terms: list[str]) -> bool:
            text = f"{item.key} {item.value.get('value', '')} {item.value.get('category', '')}"
            return any(term in text.lower() for term in terms)

        async def peer_search(i: int) -> object:
            items = await peer.asearch(("facts", subject(i)), limit=1000)
            terms = SEARCH_QUERY.lower().split()
            return [item for item in items if matches(item, terms)]

        async def ours_get(i: int) -> object:
            return await store.get_facts(subject(i))

        async def ours_tier_one(i: int) -> object:
            return await store.tier_one(subject(i))

        async def ours_search(i: int) -> object:
            return await store.search_facts(subject(i), SEARCH_QUERY)

        async def raw_get(i: int) -> object:
            return await (await ctx.raw.execute(RAW_READ, [subject(i)])).fetchall()

        async def raw_tier_one(i: int) -> object:
            return await (await ctx.raw.execute(RAW_TIER_ONE, [subject(i)])).fetchall()

        async def raw_search(i: int) -> object:
            like = f"%{SEARCH_QUERY}%"
            return await (
                await ctx.raw.execute(RAW_SEARCH_PEERS, [subject(i), like, like])
            ).fetchall()

        # --- writes ------------------------------------------------------------------------
        async def peer_put(i: int) -> object:
            ns = ("facts", subjects[(i + 11) % len(subjects)])
            return await peer.abatch([PutOp(ns, k, {"value": f"peer {i} {k}"}) for k in WRITE_KEYS])

        async def ours_put(i: int) -> object:
            return await store.upsert_facts(
                subjects[(i + 13) % len(subjects)],
                [MemoryFact(key=k, value=f"ours {i} {k}") for k in WRITE_KEYS],
            )

        # Deletes: each call removes one item made for it beforehand, ours with its history (a
        # created event, so the erasure has something to redact), theirs with a put. Each run's
        # keys are its own: the history keeps every earlier run's erased events under the same
        # keyed hash, so reused keys would make each run's erasures find more than the last.
        made = max(3, ctx.n // 20) + ctx.n
        # Letters only: a run of digits in a key looks like a card or phone number to the write
        # filter, which refuses it.
        run = "".join(random.choice(string.ascii_lowercase) for _ in range(8))
        gone = [(subjects[j % len(subjects)], f"bench_gone_{run}_{j}") for j in range(made)]
        for owner, key in gone:
            await peer.aput(("facts", owner), key, {"value": f"peer {key}"})
            await store.upsert_facts(owner, [MemoryFact(key=key, value=f"ours {key}")])
        peer_gone, ours_gone = iter(gone), iter(gone)
        parts = {}
        if os.environ.get("BENCH_PEERS_PARTS"):
            on_store = os.environ["BENCH_PEERS_PARTS"] == "store"
            parts = await erasure_parts.cases(
                ctx.raw, store, subjects, made, run, on_store=on_store
            )

        async def peer_delete(i: int) -> object:
            owner, key = next(peer_gone)
            return await peer.adelete(("facts", owner), key)

        async def ours_delete(i: int) -> object:
            owner, key = next(ours_gone)
            assert await store.delete_fact(owner, key), key
            return None

        cases = {
            "raw_get": raw_get,
            "raw_tier_one": raw_tier_one,
            "raw_search": raw_search,
            "ours_get": ours_get,
            "ours_tier_one": ours_tier_one,
            "ours_search": ours_search,
            "peer_get": peer_get,
            "peer_tier_one": peer_tier_one,
            "peer_search": peer_search,
            "peer_put": peer_put,
            "ours_put": ours_put,
            "peer_delete": peer_delete,
            "ours_delete": ours_delete,
            **parts,
        }
        chosen = {name for name in os.environ.get("BENCH_PEERS_CASES", "").split(",") if name}
        got = await take_turns(
            {name: case for name, case in cases.items() if not chosen or name in chosen}, ctx.n
        )
        for call, label, raw_label, peer_label in (
            ("get", "get_facts", "raw get", "asearch limit 1000"),
            ("tier_one", "tier_one", "raw tier one", f"asearch limit {TIER_ONE_CAP}"),
            ("search", "search_facts", "raw search (ILIKE)", "asearch + match in Python"),
        ):
            if not {f"raw_{call}", f"peer_{call}", f"ours_{call}"} <= got.keys():
                continue
            base = Row("7 peers", raw_label, got[f"raw_{call}"])
            peer_row = Row("7 peers", f"LangGraph {peer_label}", got[f"peer_{call}"], baseline=base)
            ours = Row(
                "7 peers",
                f"DjangoMemoryStore.{label}",
                got[f"ours_{call}"],
                baseline=base,
                target="p50 <= 1.5x raw",
                limit=1.5,
            )
            rows.extend([base, peer_row, ours])
            rows.append(
                Row("7 peers", f"  {label} vs LangGraph", got[f"ours_{call}"], baseline=peer_row)
            )
        for call, peer_label, label, target, limit in (
            ("put", "abatch 3 puts (no audit)", "upsert_facts 3 (audit)", "", None),
            ("delete", "adelete of one item", "delete_fact (erasure)", DELETE_TARGET, 1.5),
        ):
            if {f"peer_{call}", f"ours_{call}"} <= got.keys():
                peer_row = Row("7 peers", f"LangGraph {peer_label}", got[f"peer_{call}"])
                ours = Row(
                    "7 peers",
                    f"DjangoMemoryStore.{label}",
                    got[f"ours_{call}"],
                    baseline=peer_row,
                    target=target,
                    limit=limit,
                )
                rows.extend([peer_row, ours])
        if parts and "peer_delete" in got:
            peer_row = Row("7 peers", "LangGraph adelete of one item", got["peer_delete"])
        for number, label in enumerate(erasure_parts.LABELS, start=1):
            if f"part_{number}" in got and "peer_delete" in got:
                rows.append(
                    Row(
                        "7 peers",
                        f"  part {number}: {label}",
                        got[f"part_{number}"],
                        baseline=peer_row,
                    )
                )
        if parts:
            await erasure_parts.drop(ctx.raw)
