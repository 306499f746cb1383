"""The delete with everything a fact leaves behind (issue 42): receipts in two months, stored
API replies, receipts waiting on a job, a redacted version, a restriction, history in two
partitions. After the delete, on the store's native path (with the database layer's trick on
and off) and through Django, `pg_dump` of the whole database holds no value, key or quote of the
fact; and the tricks that give the erasing statement its generic plan (the store's inside its
lock, the service's around it on Django's connection) leave no setting behind."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import psycopg
import pytest
from django.db import connection, transaction
from django.utils import timezone

from memoryadmin.api.models import IdempotencyRecord, ServiceToken
from memoryadmin.db import fastpath_enabled, replicas
from memoryadmin.extraction.models import ExtractionJob
from memoryadmin.extraction.services import job_create_or_get
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import EventAction, FactEvent, MemoryFact
from memoryadmin.facts.services import FactDraft
from memoryadmin.facts.store import DjangoMemoryStore
from memoryadmin.usage.models import MemoryUse
from memoryadmin.usage.services import TurnUse, uses_record
from tests.support.pgdump import pg_dump_text
from tests.support.writes import agent_upsert

pytestmark = [pytest.mark.django_db(transaction=True)]

KEY = "xr7_seat_note"
MARKERS = ("Xr7first", "Xr7second", "Xr7quote", "xr7_seat")
LONG_AGO = datetime(2025, 3, 5, tzinfo=UTC)  # a month with no partition: the default one
STAFF = Actor.system("test-staff")


def _reply(subject_id: str, n: int, value: str) -> None:
    token, _ = ServiceToken.objects.get_or_create(
        name="t", defaults={"token_hash": "x" * 64, "prefix": "mat_xxxx"}
    )
    IdempotencyRecord.objects.create(
        token=token,
        key=f"k-{subject_id}-{n}",
        subject_id=subject_id,
        method="PUT",
        path=f"/api/v1/subjects/{subject_id}/facts/{KEY}",
        request_hash="h",
        status_code=200,
        response_body={"key": KEY, "value": value},
    )


def a_fact_with_everything(subject_id: str) -> None:
    """Version 1 with a quote, learned long ago (its events in the default partition), used in
    a turn then; version 2 today with a quote, in a stored reply and used again, with receipts
    waiting on a job; version 1 redacted; the fact's use stopped; a neighbour that stays."""
    services.fact_upsert(
        subject_id=subject_id,
        actor=Actor.extraction("job 1"),
        session_tag="0123456789ab",
        facts=[
            FactDraft(KEY, "Aisle Xr7first", evidence="I said Xr7quote aisle"),
            FactDraft("meal_note", "Vegetarian Xq0"),
        ],
    )
    uses_record(subject_id=subject_id, uses=[TurnUse("s-1", "t-1", injected=[KEY, "meal_note"])])
    FactEvent.objects.filter(subject_id=subject_id).update(created_at=LONG_AGO)
    MemoryUse.objects.filter(subject_id=subject_id).update(used_at=LONG_AGO)
    _reply(subject_id, 1, "Aisle Xr7first")
    services.fact_upsert(
        subject_id=subject_id,
        actor=Actor.agent("host-1"),
        facts=[FactDraft(KEY, "Window Xr7second", evidence="now Xr7quote window")],
    )
    _reply(subject_id, 2, "Window Xr7second")
    uses_record(subject_id=subject_id, uses=[TurnUse("s-1", "t-2", recalled=[KEY])])
    job_create_or_get(
        subject_id=subject_id,
        session_tag="0123456789ab",
        turn_id="t-3",
        messages=[],
        skip_reason="test",
        used={"injected": [KEY], "recalled": []},
    )
    services.fact_version_redact(
        subject_id=subject_id, key=KEY, version=1, actor=STAFF, reason="names a third party"
    )
    services.fact_restrict(
        subject_id=subject_id, key=KEY, actor=Actor.customer(subject_id), reason="portal"
    )
    dump = pg_dump_text()
    assert all(marker in dump for marker in MARKERS[1:]), "the fact is everywhere before"
    assert "Xr7first" not in dump  # version 1 was redacted already
    used = MemoryUse.objects.filter(subject_id=subject_id)
    assert {u.used_at.year for u in used} == {LONG_AGO.year, timezone.now().year}
    years = {e.created_at.year for e in FactEvent.objects.filter(subject_id=subject_id)}
    assert years == {LONG_AGO.year, timezone.now().year}


def _native_delete(subject_id: str, loop: asyncio.AbstractEventLoop) -> bool:
    store = DjangoMemoryStore(native=True, actor=Actor.agent("host-1"))
    return asyncio.run_coroutine_threadsafe(store.delete_fact(subject_id, KEY), loop).result(10)


@pytest.mark.parametrize(
    ("path", "trick"),
    [
        ("native", "functions"),
        ("native", "plan-in-lock"),
        ("native", "set-reset"),
        ("django", "prepared"),
        ("django", "planned"),
    ],
    ids=[
        "native",
        "native-DATABASE_LOCKED_FUNCTIONS-off",
        "native-DATABASE_PLAN_IN_LOCK-off-too",
        "django",
        "django-DATABASE_PREPARED_WRITES-off",
    ],
)
def test_a_delete_leaves_nothing_of_a_fact_that_left_copies_everywhere(
    path, trick, settings, host_loop
):
    """The native path's tricks are `DATABASE_LOCKED_FUNCTIONS` (the lock and the erasure as one
    call of their server-side function) and, without it, `DATABASE_PLAN_IN_LOCK`; the service's
    (the portal's and staff's delete) `DATABASE_PREPARED_WRITES`."""
    settings.DATABASE_LOCKED_FUNCTIONS = trick == "functions"
    settings.DATABASE_PLAN_IN_LOCK = trick != "set-reset"
    settings.DATABASE_PREPARED_WRITES = trick != "planned"
    subject_id = f"xr7-{path}-{trick}"
    a_fact_with_everything(subject_id)

    if path == "native":
        assert _native_delete(subject_id, host_loop) is True
    else:
        assert services.fact_delete(subject_id=subject_id, key=KEY, actor=STAFF) is True

    dump = pg_dump_text()
    assert [marker for marker in MARKERS if marker in dump] == []
    assert "Vegetarian Xq0" in dump  # the neighbour stays
    assert not MemoryFact.objects.filter(subject_id=subject_id, key=KEY).exists()
    uses = MemoryUse.objects.filter(subject_id=subject_id)
    neighbour = MemoryFact.objects.get(subject_id=subject_id, key="meal_note")
    assert list(uses.filter(erased_at__isnull=True).values_list("fact_id", flat=True)) == [
        neighbour.pk
    ]
    assert uses.filter(erased_at__isnull=False).count() == 2  # tombstones, in both months
    assert all(r.reply_erased_at for r in IdempotencyRecord.objects.filter(subject_id=subject_id))
    assert ExtractionJob.objects.get(subject_id=subject_id, turn_id="t-3").used is None
    assert FactEvent.objects.filter(subject_id=subject_id, action=EventAction.DELETED).count() == 1


def _delete_on(conn: psycopg.AsyncConnection, subject_id: str, key: str) -> bool:
    return services.fact_delete_async(conn=conn, subject_id=subject_id, key=key, actor=STAFF)


@pytest.mark.parametrize("plan_in_lock", [True, False], ids=["on", "DATABASE_PLAN_IN_LOCK-off"])
def test_the_delete_runs_its_generic_plan_and_leaves_no_setting_behind(
    plan_in_lock, settings, host_loop
):
    """Without the server-side function: the erasing statement, prepared by psycopg after a few
    calls, runs its generic plan from the first prepared call (never planned afresh per call),
    and the connection goes back to the pool with the server's plan_cache_mode as it found it,
    whether the trick asked for the plan inside the lock or a SET and a RESET did."""
    settings.DATABASE_LOCKED_FUNCTIONS = False
    settings.DATABASE_PLAN_IN_LOCK = plan_in_lock
    agent_upsert("xr7-plans", *[(f"topic_{i}", f"Value {i}") for i in range(9)])

    async def deletes() -> tuple[list[tuple], str, bool]:
        conn = await psycopg.AsyncConnection.connect(
            **replicas.conninfo("default"), autocommit=True, prepare_threshold=5
        )
        async with conn:
            gone = [await _delete_on(conn, "xr7-plans", f"topic_{i}") for i in range(8)]
            plans = await (
                await conn.execute(
                    "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                    " WHERE statement LIKE '%%erased_facts%%'"
                )
            ).fetchall()
            mode = (await (await conn.execute("SHOW plan_cache_mode")).fetchone())[0]
            return plans, mode, all(gone)

    plans, mode, all_gone = asyncio.run_coroutine_threadsafe(deletes(), host_loop).result(20)
    assert all_gone
    assert mode == "auto"
    [(generic, custom)] = plans
    assert custom == 0 and generic >= 2  # prepared after a few calls; never a custom plan
    assert list(
        MemoryFact.objects.filter(subject_id="xr7-plans").values_list("key", flat=True)
    ) == ["topic_8"]


def _plans_of_the_erasing_statement() -> list[tuple[int, int]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
            " WHERE statement LIKE '%%erased_facts%%'"
        )
        return cursor.fetchall()


def _plan_cache_mode() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        return cursor.fetchone()[0]


@pytest.mark.parametrize(
    ("prepared", "pooler", "cursor_trick"),
    [(True, "", True), (False, "", True), (True, "transaction", True), (True, "", False)],
    ids=["on", "DATABASE_PREPARED_WRITES-off", "behind-a-pooler", "FASTPATH_DJANGO_CURSOR-off"],
)
def test_the_services_delete_runs_a_generic_plan_and_leaves_the_callers_mode(
    prepared, pooler, cursor_trick, settings
):
    """`services.fact_delete` on Django's connection: on, the erasing statement is prepared from
    its first call and runs its generic plan every time (never planned afresh); off, behind a
    transaction-mode pooler, or with the prepared cursor's fast path off, nothing is prepared.
    Either way a caller's transaction goes on with the `plan_cache_mode` it had, and the
    connection is back at the server's default after it."""
    settings.DATABASE_PREPARED_WRITES = prepared
    settings.DATABASE_POOLER = pooler
    settings.FASTPATH_DJANGO_CURSOR = cursor_trick
    connection.close()  # a connection of its own: no statement prepared by an earlier test
    agent_upsert("xr7-sync-plans", *[(f"topic_{i}", f"Value {i}") for i in range(6)])
    for i in range(3):  # each in a transaction of its own (the portal's and staff's case)
        assert services.fact_delete(subject_id="xr7-sync-plans", key=f"topic_{i}", actor=STAFF)
    assert _plan_cache_mode() == "auto"
    with transaction.atomic():  # a caller's enclosing transaction with a mode of its own
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL plan_cache_mode = force_custom_plan")
        for i in range(3, 5):
            assert services.fact_delete(subject_id="xr7-sync-plans", key=f"topic_{i}", actor=STAFF)
        assert _plan_cache_mode() == "force_custom_plan"
    assert _plan_cache_mode() == "auto"
    if prepared and not pooler and fastpath_enabled("FASTPATH_DJANGO_CURSOR"):
        assert _plans_of_the_erasing_statement() == [(5, 0)]
    else:
        assert _plans_of_the_erasing_statement() == []
    assert list(
        MemoryFact.objects.filter(subject_id="xr7-sync-plans").values_list("key", flat=True)
    ) == ["topic_5"]
