"""Run by tests/facts/test_store_loops.py in a process of its own, the way an agent host calls
DjangoMemoryStore: every call in its own `asyncio.run`. Prints one JSON line: how long the
slowest call took and how many connections this process holds afterwards."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
django.setup()

import psycopg  # noqa: E402
from django.db import connections  # noqa: E402

from memoryadmin.facts.errors import FactBlocked  # noqa: E402
from memoryadmin.facts.store import DjangoMemoryStore  # noqa: E402
from memoryadmin_client.types import MemoryCategory, MemoryFact  # noqa: E402

APP = os.environ["PROBE_APPLICATION_NAME"]


def fact(key: str, value: str) -> MemoryFact:
    return MemoryFact(key=key, value=value, category=MemoryCategory.PREFERENCE)


def open_connections() -> int:
    """Connections of this process's (the store's and Django's), by application name, seen from
    a connection that is not one of them."""
    params = connections["default"].settings_dict
    with psycopg.connect(
        dbname=params["NAME"],
        user=params["USER"],
        host=params["HOST"],
        port=params["PORT"] or 5432,
        application_name="probe-counter",
    ) as conn:
        (count,) = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [APP]
        ).fetchone()
    return count


def main(calls: int) -> None:
    store = DjangoMemoryStore(native=True, session_id="host-probe")
    refused = slowest = 0.0
    refusals = 0
    for n in range(calls):
        subject = f"host-{n % 7}"
        step = n % 10
        started = time.monotonic()
        if step in (0, 4):
            asyncio.run(store.upsert_facts(subject, [fact(f"k{n % 5}", f"Likes aisle {n}")]))
        elif step == 1:
            asyncio.run(store.tier_one(subject))
        elif step == 2:
            asyncio.run(store.get_facts(subject))
        elif step == 3:
            asyncio.run(store.search_facts(subject, "aisle"))
        elif step == 5:
            try:
                asyncio.run(store.upsert_facts(subject, [fact("phone", "call 0912 345 678")]))
            except FactBlocked:
                refusals += 1
                refused = max(refused, time.monotonic() - started)
        elif step == 6:
            asyncio.run(store.delete_fact(subject, f"k{n % 5}"))
        elif step == 7:
            asyncio.run(store.delete_fact(subject, ""))
        elif step == 8:
            asyncio.run(store.purge_generation(subject))
        else:
            asyncio.run(store.clear(subject))
        slowest = max(slowest, time.monotonic() - started)
    print(
        json.dumps(
            {
                "calls": calls,
                "refusals": refusals,
                "slowest_call": round(slowest, 3),
                "slowest_refusal": round(refused, 3),
                "connections_after": open_connections(),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main(int(sys.argv[1]))
