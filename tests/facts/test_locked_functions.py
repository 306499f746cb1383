"""The store's delete as one call of a server-side function (`db.LockedWrite`, made by `migrate`):
it is made for the erasers registered, used when it is there, and when it is not (not made yet,
dropped by a newer release's migrate, `DATABASE_LOCKED_FUNCTIONS` off) the lock and the erasing
statement are sent as before; either way the same rows change."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from django.db import connection
from psycopg.errors import UndefinedFunction

from memoryadmin import db
from memoryadmin.db import functions, replicas
from memoryadmin.facts import erasure, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import EventAction, FactEvent, MemoryFact
from memoryadmin.facts.store import DjangoMemoryStore
from memoryadmin.privacy.models import OutboxEvent
from memoryadmin.privacy.recipients import webhook_recipient_add
from memoryadmin.usage.models import MemoryUse
from tests.facts.test_delete_erasure import KEY, MARKERS, a_fact_with_everything
from tests.privacy.receiver import Receiver
from tests.support.pgdump import pg_dump_text
from tests.support.writes import agent_upsert

pytestmark = [pytest.mark.django_db(transaction=True)]

STAFF = Actor.system("test-staff")
STALE = "memoryadmin_erase_fact_0000000000000000"


def the_write() -> db.LockedWrite:
    return erasure._erase_fact_write(erasure._erasers_sql())


def function_there(name: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regproc(%s) IS NOT NULL", [name])
        return cursor.fetchone()[0]


def reinstall() -> None:
    with connection.cursor() as cursor:
        erasure.install_functions(cursor)


@pytest.fixture
def function_dropped():
    """The store's delete function dropped behind the process's back (the cache still says it
    is there), made again afterwards for the other tests of this database."""
    name = the_write().name
    assert function_there(name)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP FUNCTION {name}")  # noqa: S608 (our own identifier)
    yield name
    reinstall()
    assert function_there(name)


def on_own_connection(work, host_loop):
    """`work(conn)` on an autocommit psycopg connection of its own (the store's kind), whose
    prepared statements can then be read."""

    async def run():
        conn = await psycopg.AsyncConnection.connect(
            **replicas.conninfo("default"), autocommit=True, prepare_threshold=5
        )
        async with conn:
            result = await work(conn)
            prepared = await (
                await conn.execute("SELECT statement FROM pg_prepared_statements")
            ).fetchall()
            mode = (await (await conn.execute("SHOW plan_cache_mode")).fetchone())[0]
            assert mode == "auto"  # nothing the function or the statements set outlives them
            return result, [row[0] for row in prepared]

    return asyncio.run_coroutine_threadsafe(run(), host_loop).result(30)


def deletes(subject_id: str, keys: list[str]):
    async def work(conn):
        return [
            await services.fact_delete_async(conn=conn, subject_id=subject_id, key=k, actor=STAFF)
            for k in keys
        ]

    return work


def test_migrate_made_the_function_of_the_erasers_registered_and_nothing_else():
    name = the_write().name
    assert function_there(name)
    with connection.cursor() as cursor:
        cursor.execute("SELECT proname FROM pg_proc WHERE proname LIKE 'memoryadmin%%'")
        assert [row[0] for row in cursor.fetchall()] == [name]


def test_installing_drops_an_earlier_definition_and_keeps_the_current_one():
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE FUNCTION {STALE}() RETURNS integer LANGUAGE sql AS 'SELECT 1'")
        cursor.execute(
            "CREATE FUNCTION memoryadmin_other_1() RETURNS integer AS 'SELECT 1' LANGUAGE sql"
        )
        try:
            assert erasure.install_functions(cursor) == [the_write().name]
            assert not function_there(STALE)
            assert function_there(the_write().name)
            assert function_there("memoryadmin_other_1")  # another prefix: not ours to drop
        finally:
            cursor.execute("DROP FUNCTION IF EXISTS memoryadmin_other_1()")


@pytest.mark.parametrize("enabled", [True, False], ids=["on", "DATABASE_LOCKED_FUNCTIONS-off"])
def test_the_store_calls_the_function_when_it_is_on(enabled, settings, host_loop):
    settings.DATABASE_LOCKED_FUNCTIONS = enabled
    agent_upsert("lf-calls", *[(f"topic_{i}", f"Value {i}") for i in range(9)])
    gone, prepared = on_own_connection(
        deletes("lf-calls", [f"topic_{i}" for i in range(8)]), host_loop
    )
    assert gone == [True] * 8
    calls = [s for s in prepared if the_write().name in s]
    statements = [s for s in prepared if "erased_facts" in s]
    assert (len(calls), len(statements)) == ((1, 0) if enabled else (0, 1))
    assert list(MemoryFact.objects.filter(subject_id="lf-calls").values_list("key", flat=True)) == [
        "topic_8"
    ]
    assert FactEvent.objects.filter(subject_id="lf-calls", action=EventAction.DELETED).count() == 8


def test_a_host_running_each_call_in_its_own_loop_deletes_through_the_function():
    """As agent hosts call the store: `asyncio.run` per call, so each call's loop opens its
    own connection (nothing prepared), asks once whether the function is there, and calls it."""
    agent_upsert("lf-hosts", *[(f"topic_{i}", f"Hostvalue Hq{i}") for i in range(3)])
    functions._known.clear()
    store = DjangoMemoryStore(native=True, actor=Actor.agent("host-1"))
    gone = [asyncio.run(store.delete_fact("lf-hosts", f"topic_{i}")) for i in range(3)]
    assert gone == [True, True, True]
    assert asyncio.run(store.delete_fact("lf-hosts", "topic_0")) is False  # already gone
    assert functions._known[the_write().name][0] is True  # found, and never found missing
    assert FactEvent.objects.filter(subject_id="lf-hosts", action=EventAction.DELETED).count() == 3
    assert "Hostvalue" not in pg_dump_text()


def test_a_function_dropped_since_is_forgotten_and_the_statements_erase(
    function_dropped, host_loop
):
    agent_upsert("lf-dropped", ("seat_note", "Aisle Dq1"), ("meal_note", "Vegetarian Dq2"))
    functions._known[function_dropped] = (True, 0.0)  # as a process that saw it before the drop
    gone, prepared = on_own_connection(deletes("lf-dropped", ["seat_note"]), host_loop)
    assert gone == [True]
    assert functions._known[function_dropped][0] is False
    assert "Dq1" not in pg_dump_text() and "Dq2" in pg_dump_text()
    # Asked again only later: the next delete goes straight to the statements.
    gone, _ = on_own_connection(deletes("lf-dropped", ["meal_note"]), host_loop)
    assert gone == [True]
    assert "Dq2" not in pg_dump_text()


def test_an_error_inside_the_function_is_raised_not_taken_for_its_absence(host_loop):
    broken = db.LockedWrite(
        prefix="memoryadmin_broken",
        lock="SELECT 1 FROM memory_subject WHERE subject_id = %(subject)s FOR UPDATE",
        write="SELECT 'x'::varchar",
        params=(("subject", "text"),),
        returns=(("x", "varchar"),),
        body="PERFORM no_such_function_here(); RETURN QUERY SELECT 'x'::varchar;",
    )
    with connection.cursor() as cursor:
        db.locked_functions_install(cursor, [broken])
    try:

        async def call(conn):
            with pytest.raises(UndefinedFunction) as raised:
                await db.locked_write(conn, broken, {"subject": "lf-broken"})
            return raised.value.diag.context

        context, _ = on_own_connection(call, host_loop)
        assert "PL/pgSQL function" in context
        assert functions._known[broken.name][0] is True
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP FUNCTION IF EXISTS {broken.name}")  # noqa: S608


def _state(subject_id: str) -> dict:
    """What an erasure leaves of a fact: comparable between two travellers (no ids, no times
    but whether they are set, hashes as "digest")."""
    events = FactEvent.objects.filter(subject_id=subject_id).order_by("created_at", "id")
    return {
        "history": [
            (
                e.action,
                e.key == e.key_hash,
                e.before is None,
                e.after is None
                if e.action != EventAction.DELETED
                else e.after["erased_fact"].keys(),
                e.redacted_at is not None,
                e.actor_kind,
            )
            for e in events
            if e.key_hash == erasure.key_digest(subject_id, KEY)
        ],
        "facts": list(MemoryFact.objects.filter(subject_id=subject_id).values_list("key", "value")),
        "receipts": sorted(
            (u.fact_id is None, u.erased_at is not None)
            for u in MemoryUse.objects.filter(subject_id=subject_id)
        ),
        "outbox": list(
            OutboxEvent.objects.filter(subject_id=subject_id)
            .order_by("id")
            .values_list("event_type", "path", "key_hash")
        ),
    }


@pytest.fixture
def erasure_recipient(settings):
    """A system listening for erasures (a real HTTP receiver), so the outbox's eraser writes."""
    settings.DEBUG = True  # the receiver is plain http:// on 127.0.0.1
    running = Receiver().start()
    try:
        _, running.secret = webhook_recipient_add(
            name="Warehouse",
            url=running.url,
            events=["memory.fact.erased"],
            actor=Actor.system("test"),
        )
        yield running
    finally:
        running.stop()


def test_the_function_and_the_statements_erase_the_same_rows(
    erasure_recipient, settings, host_loop
):
    """Everything a fact leaves (receipts in two months, replies, waiting receipts, a redacted
    version, a restriction, history in two partitions) with a webhook recipient listening, so
    every eraser has rows to change: erased by the function for one traveller and by the
    statements for another, the two end the same, and `pg_dump` holds nothing of either."""
    assert erasure_recipient.url
    states = {}
    for enabled in (True, False):
        settings.DATABASE_LOCKED_FUNCTIONS = enabled
        subject_id = f"lf-same-{enabled}"
        a_fact_with_everything(subject_id)
        gone, prepared = on_own_connection(deletes(subject_id, [KEY]), host_loop)
        assert gone == [True]
        states[enabled] = _state(subject_id)
    for_the_function, for_the_statements = states[True], states[False]
    assert for_the_function["outbox"][-1][2] == erasure.key_digest("lf-same-True", KEY)
    for state in states.values():  # the hash differs by traveller: compared as "a digest"
        state["outbox"] = [(kind, path, bool(digest)) for kind, path, digest in state["outbox"]]
    assert for_the_function == for_the_statements
    assert for_the_function["outbox"] == [
        ("memory.restricted", "traveller", True),  # the fixture's stop (Art. 19)
        ("memory.fact.erased", str(STAFF.kind), True),  # the erasure's own
    ]
    dump = pg_dump_text()
    assert [marker for marker in MARKERS if marker in dump] == []
