"""Monthly partitions of the append-only tables (issue 31): the migration that converts them
keeps every row, the upkeep makes months ahead and moves strays out of the default partition,
and retention by month keeps what must outlive the month and drops the rest."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.db.utils import DatabaseError
from django.utils import timezone

from memoryadmin.access.models import StaffAccess
from memoryadmin.db import partitions
from memoryadmin.facts import services
from memoryadmin.facts import sql as facts_sql
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent, MemorySettings
from memoryadmin.facts.tasks import partitions_upkeep_task
from memoryadmin.usage.models import MemoryUse
from tests.support.dbscan import occurrences
from tests.support.writes import agent_upsert

TABLES = {
    "memory_fact_event": "created_at",
    "memory_use": "used_at",
    "staff_access": "at",
    "privacy_webhook_attempt": "attempted_at",
}
BEFORE = [
    ("facts", "0010_issue23_changed_at"),
    ("usage", "0001_initial"),
    ("access", "0001_initial"),
    ("privacy", "0001_initial"),
]
STAFF = Actor.system("test-staff")


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def _count(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT count(*) FROM "{table}"')  # noqa: S608
        return cursor.fetchone()[0]


def _fill_plain_tables(now: datetime) -> None:
    """Rows in the tables as they were before 0011: this month, two years ago, next year."""
    times = [now, now - timedelta(days=730), now - timedelta(days=400), now + timedelta(days=365)]
    with connection.cursor() as cursor:
        for n, at in enumerate(times * 5):
            cursor.execute(
                "INSERT INTO memory_fact_event (subject_id, key, key_hash, action, actor_kind,"
                " actor_label, reason, session_tag, created_at, receipt)"
                " VALUES (%s, '', '', 'subject_cleared', 'agent', '', '', '', %s, '')",
                [f"T-{n}", at],
            )
            cursor.execute(
                "INSERT INTO memory_use (subject_id, key_hash, fact_id, session_tag, turn_id,"
                " how, used_at) VALUES (%s, 'h', 1, '', '', 'injected', %s)",
                [f"T-{n}", at],
            )
            cursor.execute(
                "INSERT INTO staff_access (at, staff_username, subject_id, what, login_method)"
                " VALUES (%s, 'ann', %s, 'traveller', '')",
                [at, f"T-{n}"],
            )
        cursor.execute(
            "INSERT INTO privacy_webhook_recipient (name, url, events, secret_encrypted, active,"
            " failing, consecutive_failures, created_at)"
            " VALUES ('r', 'https://r.example/', '[]', '', true, false, 0, now()) RETURNING id"
        )
        recipient = cursor.fetchone()[0]
        cursor.execute(
            "INSERT INTO privacy_webhook_outbox (msg_id, event_type, subject_id, key_hash,"
            " receipt, path, request_number, occurred_at, created_at)"
            " VALUES ('m', 'memory.subject.erased', 'T', '', '', 'traveller', '', now(), now())"
            " RETURNING id"
        )
        event = cursor.fetchone()[0]
        cursor.execute(
            "INSERT INTO privacy_webhook_delivery (event_id, recipient_id, status, attempts,"
            " created_at) VALUES (%s, %s, 'pending', 0, now()) RETURNING id",
            [event, recipient],
        )
        delivery = cursor.fetchone()[0]
        for at in times:
            cursor.execute(
                "INSERT INTO privacy_webhook_attempt (delivery_id, attempted_at, duration_ms,"
                " ok, error, replay) VALUES (%s, %s, 5, false, '', false)",
                [delivery, at],
            )


@pytest.mark.django_db(transaction=True)
def test_migrating_makes_each_table_partitioned_by_month_and_loses_no_row():
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    now = timezone.now()
    try:
        _migrate(BEFORE)
        assert not any(partitions.is_partitioned(table) for table in TABLES)
        _fill_plain_tables(now)
        before = {table: _count(table) for table in TABLES}
        assert before == {
            "memory_fact_event": 20,
            "memory_use": 20,
            "staff_access": 20,
            "privacy_webhook_attempt": 4,
        }
    finally:
        _migrate(latest)

    assert {table: _count(table) for table in TABLES} == before
    this = partitions.month_of(now)
    for table, column in TABLES.items():
        assert partitions.is_partitioned(table)
        parts = partitions.partitions(table)
        wanted = {
            partitions.part_name(table, partitions.add_months(this, n))
            for n in range(partitions.MONTHS_AHEAD + 1)
        }
        assert wanted <= set(parts), (table, sorted(parts))
        assert parts[partitions.default_name(table)] == "DEFAULT"
        # Old rows went to their own month, not to the default partition.
        assert _count(partitions.default_name(table)) == 0
        two_years_ago = partitions.month_of(now - timedelta(days=730))
        assert partitions.part_name(table, two_years_ago) in parts
        with connection.cursor() as cursor:
            # Every partition has every index of the parent (the primary key among them).
            cursor.execute(
                "SELECT c.relname, count(x.indexrelid) FROM pg_inherits AS i"
                " JOIN pg_class AS c ON c.oid = i.inhrelid"
                " LEFT JOIN pg_index AS x ON x.indrelid = c.oid"
                " WHERE i.inhparent = %s::regclass GROUP BY c.relname",
                [table],
            )
            per_part = dict(cursor.fetchall())
            cursor.execute("SELECT count(*) FROM pg_index WHERE indrelid = %s::regclass", [table])
            on_parent = cursor.fetchone()[0]
            cursor.execute(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
                " WHERE conrelid = %s::regclass AND contype = 'p'",
                [table],
            )
            # The traveller's tables hold subject_id in the key too (ready to distribute).
            keyed = ", subject_id" if table in ("memory_fact_event", "memory_use") else ""
            assert cursor.fetchone()[0] == f"PRIMARY KEY (id, {column}{keyed})"
        assert on_parent >= 2
        assert set(per_part.values()) == {on_parent}, (table, per_part)

    # New rows get ids after the old ones (the identity sequence carried on).
    agent_upsert("after-migration", ("seat", "Aisle"))
    event = FactEvent.objects.get(subject_id="after-migration")
    assert event.pk > max(FactEvent.objects.exclude(pk=event.pk).values_list("pk", flat=True))
    # History keeps its free room on every partition (HOT erasure).
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT reloptions FROM pg_class AS c JOIN pg_inherits AS i"
            " ON c.oid = i.inhrelid WHERE i.inhparent = 'memory_fact_event'::regclass"
        )
        assert cursor.fetchall() == [(["fillfactor=70"],)]


@pytest.mark.django_db(transaction=True)
def test_the_migration_goes_back_to_plain_tables_with_every_row():
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    agent_upsert("back-1", ("seat", "Aisle"), ("meal", "Vegan"))
    counts = {table: _count(table) for table in TABLES}
    try:
        _migrate(BEFORE)
        assert not any(partitions.is_partitioned(table) for table in TABLES)
        assert {table: _count(table) for table in TABLES} == counts
    finally:
        _migrate(latest)
    assert all(partitions.is_partitioned(table) for table in TABLES)
    assert {table: _count(table) for table in TABLES} == counts


@pytest.mark.django_db
def test_the_access_record_stays_append_only_in_every_partition():
    StaffAccess.objects.create(at=timezone.now(), staff_username="ann", what="traveller")
    far = datetime(2031, 5, 6, tzinfo=UTC)
    StaffAccess.objects.create(at=far, staff_username="ann", what="traveller")  # default
    for sql in ("UPDATE staff_access SET what = 'export'", "DELETE FROM staff_access"):
        with (
            pytest.raises(DatabaseError, match="append-only|retention sweep"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(sql)
    assert StaffAccess.objects.count() == 2


@pytest.mark.django_db
def test_upkeep_makes_months_ahead_and_moves_strays_out_of_the_default_partition():
    far = datetime(2031, 5, 6, tzinfo=UTC)
    # No partition for that month: the insert does not fail, the row waits in the default.
    StaffAccess.objects.create(at=far, staff_username="ann", what="traveller")
    MemoryUse.objects.create(
        subject_id="s", key_hash="h", fact_id=1, how="injected", used_at=far + timedelta(days=3)
    )
    assert _count("staff_access_default") == 1
    assert _count("memory_use_default") == 1
    later = datetime(2030, 11, 20, tzinfo=UTC)

    made = partitions.partitions_upkeep(now=later)

    assert "staff_access_y2031m05" in made and "memory_use_y2031m05" in made
    for table in TABLES:
        for n in range(partitions.MONTHS_AHEAD + 1):
            month = partitions.add_months(partitions.month_of(later), n)
            assert partitions.part_name(table, month) in partitions.partitions(table)
        # This month and the next, no further: every empty month would be one more partition
        # each erasure opens (no stray of 2031-01 here).
        assert partitions.part_name(table, datetime(2030, 12, 1, tzinfo=UTC)) in made
        assert partitions.part_name(table, datetime(2031, 1, 1, tzinfo=UTC)) not in made
    assert _count("staff_access_default") == 0
    assert _count("staff_access_y2031m05") == 1
    assert _count("memory_use_y2031m05") == 1
    assert StaffAccess.objects.filter(at=far).count() == 1  # moved, not lost nor doubled
    assert partitions.partitions_upkeep(now=later) == []  # nothing left to do


@pytest.mark.django_db
def test_the_beat_task_runs_the_upkeep(settings):
    assert "partitions-upkeep" in settings.CELERY_BEAT_SCHEDULE
    entry = settings.CELERY_BEAT_SCHEDULE["partitions-upkeep"]
    assert entry["task"] == "memoryadmin.facts.tasks.partitions_upkeep_task"
    StaffAccess.objects.create(
        at=datetime(2031, 5, 6, tzinfo=UTC), staff_username="ann", what="traveller"
    )
    result = partitions_upkeep_task.apply().get()
    assert "staff_access_y2031m05" in result["made"]
    assert _count("staff_access_default") == 0


def _events_of(subject_id: str) -> list[tuple[str, str]]:
    return sorted(FactEvent.objects.filter(subject_id=subject_id).values_list("key", "action"))


@pytest.mark.django_db
def test_dropping_a_month_keeps_held_travellers_and_live_facts_and_removes_the_rest():
    MemorySettings.objects.update_or_create(pk=1, defaults={"audit_retention_days": 30})
    spec = next(s for s in partitions.registered() if s.table == "memory_fact_event")
    old_month = datetime(2025, 3, 1, tzinfo=UTC)
    partitions.month_create(spec, old_month)
    agent_upsert("drop-live", ("seat", "Aisle Qz1"), ("meal", "Vegan Qz2"))
    services.fact_delete(subject_id="drop-live", key="meal", actor=STAFF)
    agent_upsert("drop-held", ("seat", "Window Qz3"))
    services.fact_delete(subject_id="drop-held", key="seat", actor=STAFF)
    services.subject_set_legal_hold(subject_id="drop-held", hold=True, actor=STAFF, reason="c")
    agent_upsert("drop-gone", ("seat", "Middle Qz4"))
    services.subject_forget(subject_id="drop-gone", actor=Actor.customer("drop-gone"))
    in_march = old_month + timedelta(days=10)
    moved = FactEvent.objects.filter(subject_id__startswith="drop-").update(created_at=in_march)
    assert _count("memory_fact_event_y2025m03") == moved
    held_before = _events_of("drop-held")
    live_before = [e for e in _events_of("drop-live") if e[0] == "seat"]
    assert live_before and held_before
    MemoryUse.objects.create(
        subject_id="x", key_hash="h", fact_id=1, how="injected", used_at=timezone.now()
    )

    with connection.cursor() as cursor:  # the estimate the drop logs comes from statistics
        cursor.execute("ANALYZE memory_fact_event_y2025m03")
    assert spec.cutoff(timezone.now()) > partitions.add_months(old_month, 1)
    assert old_month in partitions.droppable_months(spec)
    dropped = partitions.retention_by_month()

    kept, gone = dropped["memory_fact_event_y2025m03"]
    assert _events_of("drop-held") == held_before  # on hold: all of it
    assert _events_of("drop-live") == live_before  # the live fact's history, not the erased one
    assert _events_of("drop-gone") == []  # forgotten: nothing left
    assert kept == len(held_before) + len(live_before)
    assert gone == moved - kept  # estimated, exact on a small analyzed month
    assert _count("memory_fact_event_y2025m03") == kept  # the month is the kept rows now
    assert "memory_fact_event_y2025m03" in partitions.partitions("memory_fact_event")
    assert MemoryUse.objects.filter(subject_id="x").exists()  # this month is not dropped
    with connection.cursor() as cursor:  # the bound check that spared ATTACH its scan is gone
        cursor.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE conrelid = 'memory_fact_event_y2025m03'::regclass AND contype = 'c'"
        )
        checks = dict(cursor.fetchall())
    assert "fact_event_key_hashed" in checks  # the parent's own check, inherited
    assert not [d for d in checks.values() if "created_at" in d], checks


def _month_of_history(subject_prefix: str, month: datetime) -> dict[str, list[tuple[str, str]]]:
    """A month of history of four travellers: a live fact and an erased one, a held traveller
    with an erased fact, a forgotten traveller. Returns each one's events."""
    spec = next(s for s in partitions.registered() if s.table == "memory_fact_event")
    partitions.month_create(spec, month)
    live, held, gone = (f"{subject_prefix}-{name}" for name in ("live", "held", "gone"))
    agent_upsert(live, ("seat", "Aisle"), ("meal", "Vegan"))
    services.fact_delete(subject_id=live, key="meal", actor=STAFF)
    agent_upsert(held, ("seat", "Window"))
    services.fact_delete(subject_id=held, key="seat", actor=STAFF)
    services.subject_set_legal_hold(subject_id=held, hold=True, actor=STAFF, reason="c")
    agent_upsert(gone, ("seat", "Middle"))
    services.subject_forget(subject_id=gone, actor=Actor.customer(gone))
    FactEvent.objects.filter(subject_id__startswith=f"{subject_prefix}-").update(
        created_at=month + timedelta(days=10)
    )
    return {s: _events_of(s) for s in (live, held, gone)}


@pytest.mark.django_db
def test_the_audit_sweep_and_the_drop_keep_the_same_rows():
    """One rule for both (sql.EVENTS_KEPT_PAST_RETENTION): two identical months of history, one
    dropped, the other swept row by row; the same events of each traveller are left."""
    MemorySettings.objects.update_or_create(pk=1, defaults={"audit_retention_days": 30})
    spec = next(s for s in partitions.registered() if s.table == "memory_fact_event")
    dropped_month = datetime(2025, 3, 1, tzinfo=UTC)
    swept_month = datetime(2025, 4, 1, tzinfo=UTC)
    by_drop = _month_of_history("rule-a", dropped_month)
    by_sweep = _month_of_history("rule-b", swept_month)

    partitions.month_drop(spec, dropped_month)
    while services.events_sweep_old(limit=2).more:
        pass

    def left(subjects) -> list[list[tuple[str, str]]]:  # digests differ between travellers
        return [[("#" if k.startswith("#") else k, a) for k, a in _events_of(s)] for s in subjects]

    assert left(by_drop) == left(by_sweep)
    left_by_drop = [_events_of(s) for s in by_drop]
    live, held, gone = left_by_drop
    assert live == [e for e in by_drop["rule-a-live"] if e[0] == "seat"]  # not the erased meal
    assert held == by_drop["rule-a-held"] and held  # on hold: all of it
    assert gone == []


def _plan(cursor, sql: str) -> str:
    cursor.execute(f"EXPLAIN {sql}")
    return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.django_db
def test_the_drop_finds_the_kept_rows_through_indexes_not_by_reading_the_month():
    """Under the drop's plan settings, each part of the keep rules is planned as lookups on the
    month: held travellers' rows by subject_id (from the partial `memory_subject_held`), live
    facts' events from the closed month's own partial index (the upkeep makes it), whose
    predicate the rule's condition matches. Reading the month, even through a full index,
    would cost as the month."""
    specs = {s.table: s for s in partitions.registered()}
    month = datetime(2025, 3, 1, tzinfo=UTC)
    for table in ("memory_fact_event", "memory_use"):
        partitions.month_create(specs[table], month)
    events, uses = (partitions.part_name(t, month) for t in ("memory_fact_event", "memory_use"))
    this_month = partitions.part_name("memory_fact_event", partitions.month_of(timezone.now()))
    made = partitions.closed_months_index()
    plain_key = partitions.closed_index_name(events)
    assert plain_key in made
    assert partitions.closed_index_name(this_month) not in made  # open: redaction stays HOT
    assert partitions.closed_months_index() == []  # once
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(partitions.SQL_INDEX_PLANS)
        assert specs["memory_fact_event"].keep == (
            facts_sql.EVENTS_OF_HELD_TRAVELLERS,
            facts_sql.EVENTS_OF_LIVE_FACTS_PER_ROW,
        )
        for part, held in ((events, facts_sql.EVENTS_OF_HELD_TRAVELLERS), (uses, None)):
            held = held or specs["memory_use"].keep[0]
            plan = _plan(cursor, f"SELECT * FROM {part} AS t WHERE {held}")  # noqa: S608
            assert "memory_subject_held" in plan, plan
            assert "Index Cond: ((subject_id)::text = (memory_subject.subject_id)::text)" in plan
            assert f"Seq Scan on {part}" not in plan, plan
        live = facts_sql.EVENTS_OF_LIVE_FACTS_PER_ROW
        plan = _plan(cursor, f"SELECT * FROM {events} AS t WHERE {live}")  # noqa: S608
        assert f"Scan on {plain_key}" in plan or f"using {plain_key} on" in plan, plan
        assert f"Seq Scan on {events}" not in plan, plan
        assert "memory_fact_subject_key_uniq" in plan, plan  # one lookup per plain-keyed row


# A month far larger than the fact table: 12,000 events of 40 travellers, one in a hundred of a
# live fact (plain key), the rest erased facts' (digest key), against 40 facts.
SQL_BIG_MONTH = """
INSERT INTO memory_fact_event (subject_id, key, key_hash, action, actor_kind, actor_label,
                               reason, session_tag, created_at, receipt)
SELECT 'big-' || (n %% 40), CASE WHEN n %% 100 = 7 THEN 'seat' ELSE '#' || md5(n::text) END,
       '#' || md5(n::text), 'updated', 'agent', '', '', '', %(month)s::timestamptz + n * interval
       '1 minute', ''
FROM generate_series(1, 12000) AS n
"""


@pytest.mark.django_db
def test_the_drop_looks_up_live_facts_row_by_row_when_the_month_outweighs_the_facts():
    """The drop's copy of live facts' events is driven by the month's closed index, one fact
    lookup per plain-keyed row, whatever the sizes. The plain EXISTS became a join, which the
    planner turned round when the fact table was small against the month: from memory_fact,
    reading the month once per traveller, 35 s instead of 0.44 s on a 4-million-row month
    against 100,000 facts (bench/drop_profile.py)."""
    spec = next(s for s in partitions.registered() if s.table == "memory_fact_event")
    month = datetime(2025, 3, 1, tzinfo=UTC)
    partitions.month_create(spec, month)
    events = partitions.part_name(spec.table, month)
    for n in range(40):
        agent_upsert(f"big-{n}", ("seat", "Aisle"))
    with connection.cursor() as cursor:
        cursor.execute(SQL_BIG_MONTH, {"month": month})
        cursor.execute(f"ANALYZE {events}")  # noqa: S608
        cursor.execute("ANALYZE memory_fact")
        cursor.execute(partitions.SQL_CHECKS_NOW)  # the facts' deferred checks, before DDL
    partitions.closed_months_index()
    keep_index = partitions.closed_index_name(events)
    copy = next(s for s in partitions.drop_steps(spec, month) if s.label == "keep rule 2")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(partitions.SQL_INDEX_PLANS)
        for step in partitions.drop_steps(spec, month):
            if step.label == "keep rule 1":
                break
            cursor.execute(step.statement, step.params)
        plan = _plan(cursor, copy.statement)
        assert keep_index in plan, plan
        # memory_fact only as a lookup per row (a SubPlan), never a side of a join: no join
        # order is left for the planner to turn round
        assert "Nested Loop" not in plan and "Join" not in plan, plan
        assert "Index Only Scan using memory_fact_subject_key_uniq" in plan, plan
        transaction.set_rollback(True)
    kept, _ = partitions.month_drop(spec, month)
    assert kept == 120  # n % 100 = 7 for n in 1..12000: every one a live fact's


@pytest.mark.django_db
def test_dropping_months_of_receipts_and_access_rows_past_their_retention(settings):
    settings.STAFF_ACCESS_RETENTION_DAYS = 400
    specs = {s.table: s for s in partitions.registered()}
    now = timezone.now()
    old = partitions.month_of(now - timedelta(days=500))
    recent = partitions.month_of(now - timedelta(days=300))
    for month in (old, recent):
        partitions.month_create(specs["staff_access"], month)
        partitions.month_create(specs["memory_use"], month)
        StaffAccess.objects.create(at=month + timedelta(days=1), staff_username="a", what="search")
    agent_upsert("uses-held", ("seat", "Aisle"))
    services.subject_set_legal_hold(subject_id="uses-held", hold=True, actor=STAFF, reason="c")
    for subject in ("uses-held", "uses-free"):
        MemoryUse.objects.create(
            subject_id=subject, key_hash="h", fact_id=1, how="injected", used_at=old + timedelta(1)
        )

    partitions.retention_by_month()

    assert list(StaffAccess.objects.values_list("at", flat=True)) == [recent + timedelta(days=1)]
    assert set(MemoryUse.objects.values_list("subject_id", flat=True)) == {"uses-held"}


@pytest.mark.django_db
def test_an_erased_value_is_gone_from_every_partition():
    spec = next(s for s in partitions.registered() if s.table == "memory_fact_event")
    partitions.month_create(spec, datetime(2025, 3, 1, tzinfo=UTC))
    agent_upsert("erase-parts", ("seat", "Aisle Vb7 first"))
    FactEvent.objects.filter(subject_id="erase-parts").update(
        created_at=datetime(2025, 3, 5, tzinfo=UTC)
    )
    agent_upsert("erase-parts", ("seat", "Aisle Vb7 second"))  # this month
    MemoryUse.objects.create(
        subject_id="erase-parts",
        key_hash=FactEvent.objects.filter(subject_id="erase-parts").first().key_hash,
        fact_id=1,
        how="injected",
        used_at=datetime(2025, 3, 5, tzinfo=UTC),
    )
    assert occurrences("Vb7")

    services.fact_delete(subject_id="erase-parts", key="seat", actor=STAFF)

    assert occurrences("Vb7") == {}
    assert not MemoryUse.objects.filter(subject_id="erase-parts", erased_at__isnull=True).exists()
    assert {e.created_at.year for e in FactEvent.objects.filter(subject_id="erase-parts")} == {
        2025,
        timezone.now().year,
    }


@pytest.mark.django_db
def test_the_receipts_row_sweep_keeps_what_the_drop_keeps():
    """The hourly row sweep and the drop by month agree: a held traveller's receipts stay."""
    from memoryadmin.usage.services import uses_sweep_expired

    agent_upsert("sweep-held", ("seat", "Aisle"))
    services.subject_set_legal_hold(subject_id="sweep-held", hold=True, actor=STAFF, reason="c")
    old = timezone.now() - timedelta(days=400)
    for subject in ("sweep-held", "sweep-free"):
        MemoryUse.objects.create(
            subject_id=subject, key_hash="h", fact_id=1, how="injected", used_at=old
        )

    assert uses_sweep_expired() == (1, False)
    assert set(MemoryUse.objects.values_list("subject_id", flat=True)) == {"sweep-held"}


@pytest.mark.django_db
def test_a_closed_months_index_left_invalid_is_made_again():
    """A concurrent build that fails leaves an invalid index under the name: the next upkeep
    drops and rebuilds it, rather than skipping the month for good (its drop would read it)."""
    spec = next(s for s in partitions.registered() if s.table == "memory_fact_event")
    month = datetime(2025, 3, 1, tzinfo=UTC)
    partitions.month_create(spec, month)
    index = partitions.closed_index_name(partitions.part_name(spec.table, month))
    assert index in partitions.closed_months_index()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", [index]
        )

    assert partitions.closed_months_index() == [index]

    with connection.cursor() as cursor:
        cursor.execute(partitions.SQL_INDEX_VALID, [index])
        assert cursor.fetchone()[0] is True


@pytest.mark.django_db
def test_the_drop_runs_the_listed_steps_in_order_in_one_transaction():
    """`bench/drop_profile.py` times `partitions.drop_steps`: the drop must run exactly those
    statements, in that order (the month detached before its rows are copied, the old month
    dropped only after the kept rows' partition is attached)."""
    from django.test.utils import CaptureQueriesContext

    spec = next(s for s in partitions.registered() if s.table == "memory_fact_event")
    month = datetime(2025, 3, 1, tzinfo=UTC)
    partitions.month_create(spec, month)
    steps = partitions.drop_steps(spec, month)
    labels = [step.label for step in steps]
    assert labels.index("detach") < labels.index("keep rule 1") < labels.index("attach")
    assert labels.index("attach") < labels.index("drop month") < labels.index("rename")
    assert [step.label for step in steps if step.keeps] == ["keep rule 1", "keep rule 2"]

    with CaptureQueriesContext(connection) as queries:
        partitions.month_drop(spec, month)

    heads = [step.statement.split("%(")[0] for step in steps]  # the parameters are filled in
    ran = [q["sql"] for q in queries.captured_queries]
    assert [head for head in heads for sql in ran if sql.startswith(head)] == heads
    assert [sql for sql in ran if any(sql.startswith(h) for h in heads)] == [
        sql for head in heads for sql in ran if sql.startswith(head)
    ]  # in the listed order
