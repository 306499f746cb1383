"""The least a delete with erasure can cost here (issue 42): the erasure's parts built up one at a
time, each sent as ONE server-side call (a PL/pgSQL function, so the traveller's lock and the
statement after it travel as one statement with no pipeline: the cheapest client path there is),
against LangGraph's real `adelete` and a bare `DELETE` of our row, calls taking turns.

Cases, each deleting a fact made for it (with its created event, as scenario 7's deletes):

1. LangGraph `AsyncPostgresStore.adelete` (its own table, one row).
2. A bare `DELETE` of our row, autocommit (no lock, no history, no erasers).
3. One call: the traveller's lock, then the row's `DELETE`.
4. ... and the erasure's event written to the history (what the audit trail must keep).
5. ... and the fact's past snapshots blanked in every partition of the history.
6. ... and every registered eraser: the whole erasing statement, as sent without the function.
7. `DjangoMemoryStore.delete_fact` (the call of its function, when `migrate` made it).
8. ... with `DATABASE_LOCKED_FUNCTIONS` off: the lock and the erasing statement pipelined.

Cases 3-6 each run on a connection of their own with their function made in `pg_temp` for
the run. Their parts are cut from the erasing `WITH` query (`facts.sql.SQL_ERASE_FACTS` with
every registered eraser), the statement the store sends without its own function; the store's
function (`migrate` makes it) runs the same erasure as plain statements.

    SECRET_KEY=bench-peers DATABASE_URL=postgres://postgres@127.0.0.1:5432/ma_peers_20k \
        .venv/bin/python bench/delete_floor.py [--n 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

import django  # noqa: E402

django.setup()

import psycopg  # noqa: E402
from django.conf import settings  # noqa: E402
from django.utils import timezone  # noqa: E402

from bench.harness import (  # noqa: E402
    facts_to_delete,
    letters,
    make_store,
    print_cpu_table,
    profile_subjects,
    turns_with_cpu,
)
from memoryadmin.facts import erasure  # noqa: E402
from memoryadmin.facts.actors import Actor  # noqa: E402
from memoryadmin.facts.models import EventAction  # noqa: E402
from memoryadmin.facts.sql import SQL_ERASE_FACTS  # noqa: E402

ACTOR = Actor.agent("bench")
BASE = "1. LangGraph adelete (the baseline)"
PARAMS = ("facts", "matches", "action", "reason", "now")
SQL_BARE_DELETE = "DELETE FROM memory_fact WHERE subject_id = %s AND key = %s"
SQL_CALL = "SELECT * FROM pg_temp.erase_part(%s, %s::jsonb, %s::jsonb, %s, %s, %s)"

# The function each of cases 3-6 runs: the lock, then the part (its own snapshot, as after the
# store's lock), on its generic plan.
SQL_FUNCTION = """
CREATE FUNCTION pg_temp.erase_part(p_subject text, p_facts jsonb, p_matches jsonb,
                                   p_action text, p_reason text, p_now timestamptz)
RETURNS TABLE (o_subject_id varchar, o_key varchar) LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $body$
#variable_conflict use_column
BEGIN
  PERFORM 1 FROM memory_subject WHERE subject_id = p_subject FOR UPDATE;
  RETURN QUERY {statement};
END $body$
"""


def _parts() -> dict[str, str]:
    """Cases 3-6's statements, cut from the erasing statement at its CTEs' names."""
    full = erasure.erasing_statement(
        SQL_ERASE_FACTS,
        tuple(r.sql for r in erasure._ERASERS.values() if r.on_facts and r.sql),
    )
    bare = erasure.erasing_statement(SQL_ERASE_FACTS, ())
    head = bare[: bare.index("m AS (")]
    gone = bare[bare.index("gone AS (") : bare.index("redacted AS (")]
    redacted = bare[bare.index("redacted AS (") : bare.index("recorded AS (")]
    recorded = bare[bare.index("recorded AS (") : bare.index("erased_subjects AS (")]
    matches = bare[bare.index("m AS (") : bare.index("gone AS (")]
    tail = "SELECT subject_id, key FROM gone"
    return {
        "3. one call: lock + the row's DELETE": head + gone.rstrip().rstrip(",") + "\n" + tail,
        "4. ... + the erasure's event": head + gone + recorded.rstrip().rstrip(",") + "\n" + tail,
        "5. ... + the history blanked": head
        + matches
        + gone
        + redacted
        + recorded.rstrip().rstrip(",")
        + "\n"
        + tail,
        "6. ... + every eraser (the whole erasure)": full,
    }


def _as_function(statement: str) -> str:
    for name in PARAMS:
        statement = statement.replace(f"%({name})s", f"p_{name}")
    return SQL_FUNCTION.format(statement=statement.replace("%%", "%"))


async def _run(n: int, subjects: list[str], conninfo: dict[str, Any], url: str) -> None:
    from langgraph.store.postgres import AsyncPostgresStore

    store = make_store(native=True)
    cases: dict[str, Callable[[str, str], Awaitable[Any]]] = {}
    conns = []
    async with AsyncPostgresStore.from_conn_string(url) as peer:
        await peer.setup()

        async def peer_delete(subject: str, key: str) -> None:
            await peer.adelete(("facts", subject), key)

        bare = await psycopg.AsyncConnection.connect(**conninfo, autocommit=True)
        conns.append(bare)

        async def bare_delete(subject: str, key: str) -> None:
            cursor = await bare.execute(SQL_BARE_DELETE, [subject, key])
            assert cursor.rowcount == 1, key

        cases[BASE] = peer_delete
        cases["2. a bare DELETE of our row"] = bare_delete
        for label, statement in _parts().items():
            conn = await psycopg.AsyncConnection.connect(**conninfo, autocommit=True)
            await conn.execute(_as_function(statement))
            conns.append(conn)
            cases[label] = _call(conn)

        async def store_delete(subject: str, key: str) -> None:
            assert await store.delete_fact(subject, key), key

        async def store_delete_pipelined(subject: str, key: str) -> None:
            settings.DATABASE_LOCKED_FUNCTIONS = False
            try:
                assert await store.delete_fact(subject, key), key
            finally:
                settings.DATABASE_LOCKED_FUNCTIONS = functions_on

        functions_on = settings.DATABASE_LOCKED_FUNCTIONS
        cases["7. DjangoMemoryStore.delete_fact"] = store_delete
        cases["8. ... DATABASE_LOCKED_FUNCTIONS off (lock and erasure pipelined)"] = (
            store_delete_pipelined
        )
        warm = max(10, n // 20)
        made = await facts_to_delete(
            list(cases),
            subjects,
            n + warm,
            store=store,
            peer=peer,
            peer_case=BASE,
            tag=f"bench_floor_{letters()}",
        )
        samples, cpu = await turns_with_cpu(cases, made, n, warm)
    for conn in conns:
        await conn.close()
    print(f"\n{n} calls a case taking turns (ms; ratio to LangGraph's adelete at p50)\n")
    print_cpu_table(samples, cpu, n, BASE, "x LangGraph")


def _call(conn: Any) -> Callable[[str, str], Awaitable[None]]:
    async def call(subject: str, key: str) -> None:
        params = erasure._params_erase_facts(
            [(subject, key, ACTOR)], action=EventAction.DELETED, reason="", now=timezone.now()
        )
        cursor = await conn.execute(SQL_CALL, [subject, *(params[name] for name in PARAMS)])
        assert await cursor.fetchall(), key

    return call


def main() -> int:

    from memoryadmin.db.replicas import conninfo

    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    args = parser.parse_args()
    subjects = profile_subjects()
    info = {**conninfo("default"), "options": "-c TimeZone=UTC"}
    url = psycopg.conninfo.make_conninfo(**info)
    print(
        f"# delete_floor: n={args.n}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    asyncio.run(_run(args.n, subjects, info, url))
    print(f"\nload {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
