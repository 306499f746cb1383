"""The agent's reads on the store's native async connections, routed as `replicas.subject_read`
routes Django's: a replica that has replayed the traveller's last write, else the primary.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from . import positions, replicas
from .pool import fetch_on


async def _on_replica_or_primary(
    alias: str, sql: str, params: dict[str, Any]
) -> list[tuple[Any, ...]]:
    """The read on `alias`; if that is a replica and it fails there, marked down and the read
    made on the primary (as `replicas.on_replica_or_primary`)."""
    import psycopg

    if alias == replicas.PRIMARY:
        return await fetch_on(alias, sql, params)
    try:
        return await fetch_on(alias, sql, params)
    except psycopg.OperationalError:
        replicas.mark_down(alias)
        return await fetch_on(replicas.PRIMARY, sql, params)


async def subject_fetch(sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """An agent's read of `params["subject"]`: on a replica that has replayed the traveller's
    last write, else the primary (as `replicas.subject_read`: the traveller's position read from
    Redis first, or with `DATABASE_REPLICA_READ_OVERLAP` while the replica runs the query, rows
    from a replica that had not replayed it then dropped for the primary's); a replica that fails
    the read is skipped and the primary answers."""
    if not settings.DATABASE_REPLICAS:
        return await fetch_on("default", sql, params)
    import psycopg

    state = replicas.replica_candidate(own_connection=True)
    if state is None:
        return await fetch_on(replicas.PRIMARY, sql, params)
    if not positions.in_redis():
        alias = replicas.subject_read_alias(params["subject"])
        return await _on_replica_or_primary(alias, sql, params)
    keys = (replicas.subject_key(params["subject"]),)
    if not settings.DATABASE_REPLICA_READ_OVERLAP:  # ask first, then read where it says
        pending = await positions.ask_async(keys)
        needed = None if pending is None else await pending.answer()
        if needed is None or needed > (state.replay_lsn or 0):
            return await fetch_on(replicas.PRIMARY, sql, params)
        return await _on_replica_or_primary(state.alias, sql, params)
    pending = await positions.ask_async(keys)
    if pending is None or (pending.known is not None and pending.known > (state.replay_lsn or 0)):
        return await fetch_on(replicas.PRIMARY, sql, params)
    if pending.known is not None:  # this process knows the position: no round trip
        return await _on_replica_or_primary(state.alias, sql, params)
    try:
        rows = await fetch_on(state.alias, sql, params)
    except psycopg.OperationalError:
        await pending.answer()
        replicas.mark_down(state.alias)
        return await fetch_on(replicas.PRIMARY, sql, params)
    except BaseException:
        await pending.answer()
        raise
    needed = await pending.answer()
    if needed is not None and needed <= (state.replay_lsn or 0):
        return rows
    return await fetch_on(replicas.PRIMARY, sql, params)
