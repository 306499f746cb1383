"""The store's per-loop psycopg pools (memoryadmin/db/pool.py): the size cap, a connection left
in a transaction, a connection the server dropped, the pooler's and the session's options, and a
loop that ends while its pool is still connecting."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time

import psycopg
import pytest
from django.db import connections

from memoryadmin.db import pool, replicas

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True, params=[True, False], ids=["resident-on", "resident-off"])
def resident(request, settings):
    """Every test here runs with the loop's resident connection (FASTPATH_STORE_RESIDENT_
    CONNECTION) on and off."""
    settings.FASTPATH_STORE_RESIDENT_CONNECTION = request.param
    return request.param


def _admin() -> psycopg.Connection:
    """A plain connection of the test's own (Django's refuses to run inside an event loop)."""
    return psycopg.connect(**replicas.conninfo("default"), autocommit=True)


def _backend_pids() -> set[int]:
    """Client connections to the test database other than this one."""
    with _admin() as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        ).fetchall()
    return {pid for (pid,) in rows}


def _named_pids(application_name: str) -> set[int]:
    """Connections that named themselves so: only the test's own, whatever else (a server or
    worker another test left running) connects to the same database meanwhile."""
    with _admin() as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s", [application_name]
        ).fetchall()
    return {pid for (pid,) in rows}


def _terminate(pid: int) -> None:
    with _admin() as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", [pid])


async def _pid(alias: str = "default") -> int:
    [(pid,)] = await pool.fetch_on(alias, "SELECT pg_backend_pid()", {})
    return pid


@pytest.mark.asyncio
async def test_a_loop_opens_at_most_pool_size_connections(settings):
    settings.MEMORY_STORE_POOL_SIZE = 2
    answers = await asyncio.gather(
        *(
            pool.fetch_on("default", "SELECT pg_backend_pid(), pg_sleep(0.02)", {})
            for _ in range(12)
        )
    )
    used = {pid for [(pid, _)] in answers}
    assert len(used) == 2
    await pool.close_pools()
    assert used & _backend_pids() == set()


@pytest.mark.asyncio
async def test_a_transaction_left_open_is_rolled_back_before_the_connection_is_reused(settings):
    settings.MEMORY_STORE_POOL_SIZE = 1
    async with pool.connection() as conn:
        await conn.execute("BEGIN")
        await conn.execute("CREATE TEMPORARY TABLE left_open (n int)")
        first = conn.info.backend_pid
    async with pool.connection() as conn:
        assert conn.info.backend_pid == first
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        cursor = await conn.execute("SELECT to_regclass('pg_temp.left_open')")
        assert await cursor.fetchone() == (None,)


@pytest.mark.asyncio
async def test_a_connection_the_server_dropped_is_replaced_and_the_read_retried(settings):
    settings.MEMORY_STORE_POOL_SIZE = 1
    first = await _pid()
    await asyncio.to_thread(_terminate, first)
    second = await _pid()  # the kept connection fails, a new one answers
    assert second != first
    assert await _pid() == second


@pytest.mark.asyncio
async def test_the_session_is_in_utc_and_statements_are_prepared_after_five_runs():
    async with pool.connection() as conn:
        assert conn.prepare_threshold == 5
        cursor = await conn.execute("SHOW TimeZone")
        assert await cursor.fetchone() == ("UTC",)


@pytest.mark.asyncio
async def test_behind_a_transaction_pooler_nothing_is_prepared(settings):
    settings.DATABASE_POOLER = "transaction"
    async with pool.connection() as conn:
        assert conn.prepare_threshold is None
        cursor = await conn.execute("SHOW TimeZone")  # no startup option a pooler refuses
        assert await cursor.fetchone() is not None


def test_a_loop_that_ends_while_its_pool_connects_ends_at_once():
    """The pool connects in a worker task that swallows the loop's cancellation: the store
    closes the pool as the loop shuts down, or `asyncio.run` would wait for ever."""
    # The pool's connections name themselves, so that only they are counted.
    options = connections["default"].settings_dict.setdefault("OPTIONS", {})
    saved = dict(options)
    options["application_name"] = probe = "loop-ends-while-connecting"

    async def leave_reads_waiting() -> None:
        for _ in range(4):
            asyncio.get_running_loop().create_task(pool.fetch_on("default", "SELECT 1", {}))
        for _ in range(3):
            await asyncio.sleep(0)  # the reads wait; the pool's worker starts connecting

    ended = threading.Event()

    def host() -> None:
        asyncio.run(leave_reads_waiting())
        ended.set()

    # psycopg_pool logs the cancelled connect with its traceback, and pytest's log capture would
    # keep that record, its frames and so the half-open connection alive past the test (in a
    # host, nothing keeps the record and the collector closes it).
    quiet = logging.getLogger("psycopg.pool")
    propagate, quiet.propagate = quiet.propagate, False
    try:
        threading.Thread(target=host, daemon=True).start()
        assert ended.wait(10), "asyncio.run did not return: the loop's shutdown hung"
    finally:
        quiet.propagate = propagate
        options.clear()
        options.update(saved)
    # The connection its worker was opening is closed as it arrives: give it a moment to go.
    deadline = time.monotonic() + 5
    while _named_pids(probe) and time.monotonic() < deadline:
        gc.collect()  # a connection that finished opening after its loop ended goes with it
        time.sleep(0.05)
    assert _named_pids(probe) == set()


@pytest.mark.asyncio
async def test_calls_waiting_for_the_pool_get_the_connection_given_back_at_once(settings):
    """With one connection and six calls at once, each call's connection goes to the next
    waiting call (not kept by the loop while they wait out the pool's timeout)."""
    settings.MEMORY_STORE_POOL_SIZE = 1
    started = time.monotonic()
    answers = await asyncio.gather(
        *(pool.fetch_on("default", "SELECT pg_backend_pid(), pg_sleep(0.01)", {}) for _ in range(6))
    )
    assert len({pid for [(pid, _)] in answers}) == 1
    assert time.monotonic() - started < pool.WAIT_SECONDS / 2
    await pool.close_pools()


@pytest.mark.asyncio
async def test_the_loop_keeps_its_last_connection_only_with_the_trick_on(resident):
    pid = await _pid()
    natives = pool._loop_pools()
    stats = natives.pools["default"].get_stats()
    if resident:
        conn, _cursor = natives.resident["default"]
        assert conn.info.backend_pid == pid
        assert stats["pool_available"] == 0  # checked out, kept by the loop
    else:
        assert natives.resident == {}
        assert stats["pool_available"] == stats["pool_size"] == 1
    assert await _pid() == pid  # the same connection either way
    await pool.close_pools()
    assert pid not in _backend_pids()


@pytest.mark.asyncio
async def test_a_resident_connection_past_its_lifetime_goes_back_to_the_pool(resident):
    await _pid()
    natives = pool._loop_pools()
    for conn in list(natives.expires.keys()):
        natives.expires[conn] = time.monotonic() - 1
    await _pid()
    assert natives.resident == {}
    assert natives.pools["default"].get_stats()["pool_available"] == 1
    await pool.close_pools()
