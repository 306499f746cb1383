"""The store's delete function cut into the parts of an erasure (issue 42), each a function of its
own made beside it, so scenario 7 can call them in the same turns as everything else
(`BENCH_PEERS_PARTS=1`): what each part costs among the agent's other calls, not only among
deletes (`delete_floor.py`). Each part keeps the store's lock, its parameters and its call; only
the body is shorter:

1. the traveller's lock and the row's DELETE;
2. ... and the erasure's event written to the history (the audit trail);
3. ... and the fact's past snapshots blanked (the function with no eraser);
4. ... and every registered eraser: the store's own function, called directly (the store adds
   its checks and its metric around the same call).

`BENCH_PEERS_PARTS=1` calls them on a connection of the bench's (the raw statements' one);
`BENCH_PEERS_PARTS=store` on the store's own (`db.store_connection`, the backend its reads,
upserts and deletes use): what the same function costs depends on what else its server process
runs between two calls.

The parts' functions are made in the bench database under their own prefixes and dropped by
`drop` after the run; the store's own function is the one `migrate` made.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from bench.harness import facts_to_delete
from memoryadmin import db
from memoryadmin.db import LockedWrite
from memoryadmin.facts import erasure
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import EventAction
from memoryadmin.facts.sql import PLPGSQL_ERASE_FACT

ACTOR = Actor.agent("bench")
PREFIX = "bench_erasure_part"
RETURN = "RETURN QUERY SELECT gone_row.subject_id, gone_row.key;"
LABELS = (
    "lock + the row's DELETE",
    "... + the erasure's event",
    "... + the history blanked (no eraser)",
    "... + every eraser (the store's function, called directly)",
)


def writes() -> dict[str, LockedWrite]:
    """Each part's write, by label: the store's write for one fact with a shorter body."""
    store, _ = erasure.erase_fact_write("x", "x", ACTOR, action=EventAction.DELETED, reason="")
    no_eraser = erasure._erase_fact_write(())  # the store's body, no eraser in it
    body = PLPGSQL_ERASE_FACT
    row = body[: body.index("FOREACH")]
    event = body[body.index("INSERT INTO") : body.index("{erasers}")]
    bodies = {LABELS[0]: row + RETURN, LABELS[1]: row + event + RETURN}
    made = {
        label: dataclasses.replace(store, prefix=f"{PREFIX}_{number}", body=body)
        for number, (label, body) in enumerate(bodies.items(), start=1)
    }
    made[LABELS[2]] = dataclasses.replace(no_eraser, prefix=f"{PREFIX}_3")
    made[LABELS[3]] = store
    return made


async def cases(
    conn: Any, store: Any, subjects: list[str], count: int, tag: str, *, on_store: bool = False
) -> dict[str, Callable[[int], Awaitable[object]]]:
    """Scenario 7's cases `part_1` to `part_4` (`LABELS`, in order): each part's function made
    on `conn` (an async autocommit connection, the bench's) and `count` facts made for it
    through the store (each with its created event, as the store's deletes in the scenario).
    Called on `conn`, or with `on_store` on the store's own connection (`db.store_connection`,
    the one its reads, upserts and deletes use)."""
    parts = writes()
    for label in LABELS[:3]:
        await conn.execute(parts[label].create_sql)
    facts = await facts_to_delete(
        list(LABELS), subjects, count, store=store, peer=None, peer_case="", tag=f"part_{tag}"
    )
    return {
        f"part_{number}": _caller(None if on_store else conn, parts[label], facts[label])
        for number, label in enumerate(LABELS, start=1)
    }


def _caller(
    conn: Any, write: LockedWrite, facts: Iterator[tuple[str, str]]
) -> Callable[[int], Awaitable[object]]:
    async def on(conn: Any, params: dict[str, Any]) -> None:
        cursor = await conn.execute(write.call_sql, params)
        assert await cursor.fetchall(), params["key"]

    async def call(i: int) -> object:
        subject, key = next(facts)
        _, params = erasure.erase_fact_write(
            subject, key, ACTOR, action=EventAction.DELETED, reason="deleted by the agent"
        )
        if conn is not None:
            await on(conn, params)
        else:
            async with db.store_connection() as store_conn:
                await on(store_conn, params)
        return None

    return call


async def drop(conn: Any) -> None:
    """Drop the parts' functions (the store's own stays)."""
    parts = writes()
    for label in LABELS[:3]:
        await conn.execute(f'DROP FUNCTION IF EXISTS "{parts[label].name}"')
