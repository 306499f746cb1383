"""Two definitions of the store's delete function, calls taking turns (issue 42): the one `migrate`
made for this checkout against another (an earlier release's, as `pg_get_functiondef` printed
it), each made again in `pg_temp` for the run and called with the same parameters the store
sends, each deleting a fact made for it (with its created event, as scenario 7's deletes).
LangGraph's `adelete` runs in the same turns as the scale.

    psql "$URL" -Atc "SELECT pg_get_functiondef(oid) FROM pg_proc
                      WHERE proname LIKE 'memoryadmin_erase_fact%'" > /tmp/earlier.sql  # before
    SECRET_KEY=bench-peers DATABASE_URL=postgres://postgres@127.0.0.1:5432/ma_peers_20k \
        .venv/bin/python bench/delete_function_turns.py /tmp/earlier.sql [--n 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

import django  # noqa: E402

django.setup()

import psycopg  # noqa: E402

from bench.harness import (  # noqa: E402
    facts_to_delete,
    letters,
    make_store,
    print_cpu_table,
    profile_subjects,
    turns_with_cpu,
)
from memoryadmin.db.replicas import conninfo  # noqa: E402
from memoryadmin.facts import erasure  # noqa: E402
from memoryadmin.facts.actors import Actor  # noqa: E402
from memoryadmin.facts.models import EventAction  # noqa: E402

ACTOR = Actor.agent("bench")
HEAD = re.compile(r"CREATE OR REPLACE FUNCTION [\w.\"]+\(")
BASE = "1. LangGraph adelete (the scale)"


def _in_pg_temp(definition: str, name: str) -> str:
    if not HEAD.search(definition):
        raise SystemExit("not a function definition as pg_get_functiondef prints it")
    return HEAD.sub(f"CREATE FUNCTION pg_temp.{name}(", definition, count=1)


async def _run(n: int, earlier: str) -> None:
    from langgraph.store.postgres import AsyncPostgresStore

    subjects = await asyncio.to_thread(profile_subjects)
    write, _ = erasure.erase_fact_write("x", "x", ACTOR, action=EventAction.DELETED, reason="")
    with psycopg.connect(**conninfo("default")) as conn:
        current = conn.execute(
            "SELECT pg_get_functiondef(to_regproc(%s))", [write.name]
        ).fetchone()[0]
    if current is None:
        raise SystemExit(f"{write.name} is not made here: run manage.py migrate first")
    conn = await psycopg.AsyncConnection.connect(**conninfo("default"), autocommit=True)
    definitions = {"2. the earlier definition": earlier, "3. this checkout's": current}
    for number, definition in enumerate(definitions.values()):
        await conn.execute(_in_pg_temp(definition, f"erase_{number}"))
    url = psycopg.conninfo.make_conninfo(**conninfo("default"))
    store = make_store(native=True)
    warm = max(10, n // 20)
    async with AsyncPostgresStore.from_conn_string(url) as peer:
        await peer.setup()

        async def peer_delete(subject: str, key: str) -> None:
            await peer.adelete(("facts", subject), key)

        def caller(number: int) -> Any:
            async def call(subject: str, key: str) -> None:
                write, params = erasure.erase_fact_write(
                    subject, key, ACTOR, action=EventAction.DELETED, reason=""
                )
                statement = write.call_sql.replace(f'"{write.name}"', f"pg_temp.erase_{number}")
                cursor = await conn.execute(statement, params)
                assert await cursor.fetchall(), key

            return call

        cases = {BASE: peer_delete}
        for number, label in enumerate(definitions):
            cases[label] = caller(number)
        made = await facts_to_delete(
            list(cases),
            subjects,
            n + warm,
            store=store,
            peer=peer,
            peer_case=BASE,
            tag=f"bench_defs_{letters()}",
        )
        samples, cpu = await turns_with_cpu(cases, made, n, warm)
    await conn.close()
    print(f"\n{n} calls a case taking turns (ms; ratio to LangGraph's adelete at p50)\n")
    print_cpu_table(samples, cpu, n, BASE, "x LangGraph")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("earlier", type=Path, help="the earlier definition (pg_get_functiondef)")
    parser.add_argument("--n", type=int, default=1000)
    args = parser.parse_args()
    asyncio.run(_run(args.n, args.earlier.read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
