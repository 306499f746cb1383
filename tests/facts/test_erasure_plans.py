"""The store's delete reads only the erased fact's own history and receipts, however much else its
traveller has that month: each statement inside its function, as `auto_explain` reports it (its
generic plan, run), reads a handful of rows of those tables, not the traveller's month.

A traveller the agent talks to often has hundreds of events and receipts in the current month.
Looked up by `key_hash = ANY(hashes)` or a join to the hashes, the generic plans found them by
the traveller alone and filtered every one (98 pages for 112 events on the bench database).

Not here: the erasing statement without the function (the service's delete, the sweeps, the
store where the function is not made) still reads the traveller's month of history when the
month's statistics are older than the traveller's events (its nested loop's lookup goes
through (subject_id, created_at), as cheap as (subject_id, key_hash) to a planner that expects
one row either way)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from memoryadmin.facts import erasure, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import EventAction

pytestmark = [pytest.mark.django_db]

HEAVY = "FF-EP-HEAVY"
OTHERS = [f"FF-EP-{n:04d}" for n in range(400)]
BUSY_MONTH = 150  # the heavy traveller's events and receipts this month, of other facts
USUAL_MONTH = 3  # each other traveller's
TABLES = ("memory_fact_event", "memory_use")

# Rows of other facts (five, each changed many times), this month: history and receipts written
# straight in (what the test is about is the delete that follows; the services would take
# minutes to write this many).
SQL_EVENTS = """
INSERT INTO memory_fact_event (subject_id, key, key_hash, action, actor_kind, actor_label,
                               reason, session_tag, created_at, after)
SELECT %(subject)s, 'other_' || i %% 5, '#' || substr(md5(%(subject)s || i %% 5), 1, 40),
       'changed', 'agent', 'host', '', '', now() - make_interval(secs => i),
       '{"value": "x"}'::jsonb
FROM generate_series(1, %(n)s) AS i
"""
SQL_USES = """
INSERT INTO memory_use (subject_id, key_hash, fact_id, version, session_tag, turn_id, how,
                        used_at)
SELECT %(subject)s, '#' || substr(md5(%(subject)s || i %% 5), 1, 40), i, 1, 'sess', 'turn-' || i,
       'injected', now() - make_interval(secs => i)
FROM generate_series(1, %(n)s) AS i
"""


def _rows_read(node: dict[str, Any], found: Counter[str]) -> None:
    """Rows each scan of `TABLES` returned or threw away (its filter, its recheck), by table."""
    relation = node.get("Relation Name", "")
    table = next((t for t in TABLES if relation.startswith(t)), None)
    if table and node["Node Type"] != "ModifyTable" and "Bitmap Index" not in node["Node Type"]:
        rows = node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)
        found[table] += rows * node.get("Actual Loops", 1)
        found[table] += node.get("Rows Removed by Index Recheck", 0)
    for child in node.get("Plans", []):
        _rows_read(child, found)


def _rows_read_while(delete: Callable[[], None]) -> Counter[str]:
    """Rows of `TABLES` the statements run by `delete` read (every statement, those inside a
    function too), as `auto_explain` logs them to this session."""
    logged: list[str] = []
    raw = connection.connection

    def keep(diagnostic: Any) -> None:
        logged.append(diagnostic.message_primary or "")

    with connection.cursor() as cursor:
        cursor.execute("LOAD 'auto_explain'")
        for name, value in (
            ("auto_explain.log_min_duration", "0"),
            ("auto_explain.log_analyze", "on"),
            ("auto_explain.log_nested_statements", "on"),
            ("auto_explain.log_format", "json"),
            ("client_min_messages", "log"),
        ):
            cursor.execute("SELECT set_config(%s, %s, true)", [name, value])
    raw.add_notice_handler(keep)
    try:
        delete()
    finally:
        raw.remove_notice_handler(keep)
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('client_min_messages', 'notice', true)")
    found: Counter[str] = Counter()
    plans = [json.loads(m[m.index("{") :]) for m in logged if "{" in m]
    for plan in plans:
        _rows_read(plan["Plan"], found)
    assert any("memory_fact_event" in plan["Query Text"] for plan in plans), logged
    return found


def _through_the_function() -> None:
    write, params = erasure.erase_fact_write(
        HEAVY, "seat_preference", Actor.agent("host"), action=EventAction.DELETED, reason=""
    )
    with connection.cursor() as cursor:
        cursor.execute(write.call_sql, params)
        assert cursor.fetchall() == [(HEAVY, "seat_preference")]


def test_a_delete_reads_the_facts_own_rows_not_its_travellers_month():
    # The month's statistics were taken early on; the heavy traveller's rows came since (as
    # autovacuum leaves a growing month's between its runs).
    with connection.cursor() as cursor:
        for subject in OTHERS:
            cursor.execute(SQL_EVENTS, {"subject": subject, "n": USUAL_MONTH})
            cursor.execute(SQL_USES, {"subject": subject, "n": USUAL_MONTH})
        cursor.execute("ANALYZE memory_fact_event")
        cursor.execute("ANALYZE memory_use")
        cursor.execute(SQL_EVENTS, {"subject": HEAVY, "n": BUSY_MONTH})
        cursor.execute(SQL_USES, {"subject": HEAVY, "n": BUSY_MONTH})
    services.fact_upsert(
        subject_id=HEAVY,
        facts=[services.FactDraft("seat_preference", "Prefers an aisle seat")],
        actor=Actor.agent("host"),
    )
    read = _rows_read_while(_through_the_function)
    # the fact's created event (and no receipt: it was never used), give or take an index entry
    assert read["memory_fact_event"] <= 5 and read["memory_use"] <= 5, read
