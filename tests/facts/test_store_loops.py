"""DjangoMemoryStore held the way agent hosts hold it: no shared event loop. Each `asyncio.run`
and each pytest-asyncio test has a loop of its own; no connection may outlive its loop and no
loop's shutdown may wait on the store (issue 19: 2 connections leaked per loop, and a refused
upsert hung `asyncio.run`)."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection, connections

from memoryadmin.db.pool import _natives as store_loops
from memoryadmin.facts.errors import FactBlocked
from memoryadmin.facts.store import DjangoMemoryStore

from .store_contract import fact

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module", autouse=True)
def close_django_thread_connection():
    """The store's clears and stale-config reads run on asgiref's one sync thread, whose Django
    connection would otherwise keep the test database from being dropped."""
    yield
    asyncio.run(sync_to_async(connections.close_all)())


PROBE = Path(__file__).with_name("store_host_probe.py")
ROOT = Path(__file__).resolve().parents[2]


def _database_url(application_name: str) -> str:
    from tests.extraction.worker import subprocess_database_url

    return f"{subprocess_database_url()}?application_name={application_name}"


def test_200_calls_each_in_its_own_asyncio_run_leave_no_connection_behind():
    application = f"host-probe-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(application),
        "PROBE_APPLICATION_NAME": application,
        "MEMORY_STORE_NATIVE_ASYNC": "true",
        "CELERY_BROKER_URL": "",
        "CACHE_URL": "",
    }
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(PROBE), "200"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["calls"] == 200 and result["refusals"] == 20
    # Every call returned promptly, the refused upsert included (it hung before).
    assert result["slowest_refusal"] < 5 and result["slowest_call"] < 10
    assert result["connections_after"] <= settings.MEMORY_STORE_POOL_SIZE + 2
    assert took < 170
    # And once the process is gone, so is every connection it had.
    deadline = time.monotonic() + 5
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [application]
            )
            (left,) = cursor.fetchone()
        if left == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert left == 0


def _store_backends() -> int:
    """Connections to the test database other than this test's own Django connection."""
    params = connection.settings_dict
    with psycopg.connect(
        dbname=params["NAME"],
        user=params["USER"] or "postgres",
        host=params["HOST"] or "127.0.0.1",
        port=params["PORT"] or 5432,
    ) as conn:
        (count,) = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        ).fetchone()
    return count


# --- pytest-asyncio, function-scoped loops (how agent hosts test their code) --------------------


@pytest.mark.asyncio
async def test_a_host_test_writes_and_reads_on_its_own_loop():
    store = DjangoMemoryStore(native=True, session_id="pytest-host")
    await store.upsert_facts("pa-1", [fact("seat", "Prefers aisle seats")])
    assert [f.value for f in await store.tier_one("pa-1")] == ["Prefers aisle seats"]


@pytest.mark.asyncio
async def test_a_refused_upsert_raises_and_the_loop_still_closes():
    store = DjangoMemoryStore(native=True)
    await store.upsert_facts("pa-1", [fact("seat", "Prefers aisle seats")])
    with pytest.raises(FactBlocked):
        await store.upsert_facts("pa-1", [fact("phone", "call 0912 345 678")])
    assert [f.key for f in await store.get_facts("pa-1")] == ["seat"]


@pytest.mark.asyncio
async def test_deleting_the_empty_key_answers_false_like_upstream():
    store = DjangoMemoryStore(native=True)
    await store.upsert_facts("pa-1", [fact("seat", "Prefers aisle seats")])
    assert await store.delete_fact("pa-1", "") is False
    assert await DjangoMemoryStore(native=False).delete_fact("pa-1", "   ") is False
    assert await store.delete_fact("pa-1", "seat") is True
    await store.clear("pa-1")


@pytest.mark.asyncio
async def test_async_with_closes_the_loops_connections_at_once():
    before = _store_backends()
    async with DjangoMemoryStore(native=True) as store:
        await store.upsert_facts("pa-2", [fact("meal", "Vegetarian meals")])
        assert await store.tier_one("pa-2")
        assert _store_backends() > before
    assert _store_backends() <= before


def test_after_the_loops_ended_none_of_their_connections_is_left():
    # The loops of the tests above have ended: their connections went with them, and the loops
    # themselves are freed (a closed pool's tasks hold theirs in reference cycles until the
    # collector runs).
    gc.collect()
    assert len(store_loops) == 0
    assert _store_backends() <= 1  # the sync thread's Django connection at most
