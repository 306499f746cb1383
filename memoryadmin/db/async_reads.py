"""The agent's reads on the store's native async connections, routed as `replicas.subject_read`
routes Django's (the same decision, `routing.decide`; only the reads of Redis and PostgreSQL are
awaited here): a replica that has replayed the traveller's last write, else the primary.
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
    last write, else the primary (the decision `routing.decide`, driven as `replicas.read_alias`
    drives it, the traveller's position read on this loop's Redis client when this process does
    not know it); a replica that fails the read is skipped and the primary answers."""
    if not settings.DATABASE_REPLICAS:
        return await fetch_on(replicas.PRIMARY, sql, params)
    keys = (replicas.subject_key(params["subject"]),)
    plan = replicas.route_start(keys, own_connection=True)
    if not plan.route.ask:
        alias = plan.route.alias or replicas.PRIMARY
    elif positions.in_redis():
        alias = replicas.route_finish(plan, await positions.needed_async(keys, plan.ticket))
    else:  # no Redis: Django's local cache, in memory
        alias = replicas.route_finish(plan, replicas.recorded(keys))
    return await _on_replica_or_primary(alias, sql, params)
