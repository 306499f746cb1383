"""Every hand-written statement (db/, facts/, extraction/, usage/ and quality/sql.py) is valid SQL
against the real schema: PostgreSQL plans each one (EXPLAIN, never ANALYZE, so the writes write
nothing) with sample parameters. A new statement without a sample fails here until it has one."""

from __future__ import annotations

from datetime import UTC, datetime
from types import ModuleType
from typing import Any

import pytest
from django.db import connection

from memoryadmin.db import sql as db_sql
from memoryadmin.db.cursors import lock_then_generic_plans
from memoryadmin.extraction import sql as extraction_sql
from memoryadmin.extraction import tables as extraction_tables
from memoryadmin.extraction.models import FINISHED_STATUSES, ExtractionJob
from memoryadmin.facts import erasure
from memoryadmin.facts import sql as facts_sql
from memoryadmin.facts import tables as facts_tables
from memoryadmin.quality import sql as quality_sql
from memoryadmin.quality import tables as quality_tables
from memoryadmin.usage import sql as usage_sql
from memoryadmin.usage import tables as usage_tables

NOW = datetime(2025, 1, 1, tzinfo=UTC)
SUBJECT = {"subject": "s-1", "now": NOW}
JOB = {"job": 1, "now": NOW, "may_call": True, "model": "m", "prompt_version": "0123456789ab"}

# Module constants that are not statements.
# (COPY has no plan, tests/usage runs it; AGENT_QUOTES and CALLS_MODEL are parts of SQL_BEGIN,
# planned in it)
KEEP_CONDITIONS = {
    "EVENTS_OF_HELD_TRAVELLERS": "memory_fact_event",
    "EVENTS_OF_LIVE_FACTS": "memory_fact_event",
    "EVENTS_OF_LIVE_FACTS_PER_ROW": "memory_fact_event",
    "EVENTS_KEPT_PAST_RETENTION": "memory_fact_event",
    "USES_KEPT_PAST_RETENTION": "memory_use",
}
# (EVENTS_OF_LIVE_FACTS_INDEX is an index's columns and predicate: tests/facts/test_partitions.py)
# (The PL/pgSQL of the store's delete function, and the names ahead of each eraser in it, have no
# plan of their own: `migrate` makes the function and tests/facts/test_locked_functions.py runs it.)
NOT_STATEMENTS = {
    "PLPGSQL_ERASE_FACT",
    "PLPGSQL_ERASE_FACT_DECLARE",
    "ERASE_FACT_ERASER_NAMES",
    "SQL_COPY_USES",
    "AGENT_QUOTES",
    "CALLS_MODEL",
    "EVENTS_OF_LIVE_FACTS_INDEX",
}

SAMPLES: dict[str, Any] = {
    "SQL_FACTS": SUBJECT,
    "SQL_FACT": {**SUBJECT, "key": "seat"},
    "SQL_SEARCH": {**SUBJECT, "terms": "aisle seat"},
    "SQL_TIER_ONE": {**SUBJECT, "cap": 10},
    "SQL_PURGE_GENERATION": {"subject": "s-1"},
    "SQL_CURRENT_LSN": None,
    # A template around a lock statement (db.locked_write): planned with the traveller's lock.
    "SQL_LOCK_THEN_GENERIC_PLANS": ["s-1"],
    "SQL_REPLICA_STATE": None,
    "SQL_GENERIC_PLANS_ON": None,
    "SQL_GENERIC_PLANS_BACK": None,
    "SQL_FUNCTION_PRESENT": ["memoryadmin_erase_fact_0"],
    "SQL_FUNCTIONS_OF_PREFIX": [r"memoryadmin\_erase\_fact\_%"],
    # Conditions on a row `t` (what outlives retention, issue 31): planned in a SELECT.
    "EVENTS_OF_HELD_TRAVELLERS": None,
    "EVENTS_OF_LIVE_FACTS": None,
    "EVENTS_OF_LIVE_FACTS_PER_ROW": None,
    "EVENTS_KEPT_PAST_RETENTION": None,
    "USES_KEPT_PAST_RETENTION": None,
    "SQL_SWEEP_EVENTS": {"cutoff": NOW, "limit": 1000},
    "SQL_MEMORY_AS_OF": {"subject": "s-1", "at": NOW},
    "SQL_REDACT_VERSION": {
        "subject": "s-1",
        "key": "seat",
        "hashes": ["#0"],
        "version": 1,
        "now": NOW,
    },
    "SQL_LOCK_SUBJECT": ["s-1"],
    "SQL_LOCK_SUBJECT_ONLY": ["s-1"],
    "SQL_LOCK_SUBJECT_NAMED": {"subject": "s-1"},
    "SQL_NEW_SUBJECT": ["s-1", NOW, NOW],
    "SQL_EXISTING": ["s-1", ["seat", "meal"]],
    "SQL_INSERT_FACTS": ["s-1", "0123456789ab", NOW, "agent", "[]"],
    "SQL_UPDATE_FACTS": ["[]", "s-1"],
    "SQL_INSERT_EVENTS": ["s-1", "agent", None, "label", "reason", "0123456789ab", NOW, "[]"],
    "SQL_ERASE_FACTS": {
        "facts": "[]",
        "matches": "[]",
        "action": "deleted",
        "reason": "",
        "now": NOW,
    },
    "SQL_ERASE_SUBJECT": SUBJECT,
    "SQL_BEGIN": JOB,
    "SQL_BEGIN_IN_TRANSACTION": JOB,
    "SQL_SUCCEED": {
        **dict.fromkeys(extraction_sql.SUCCESS_COUNTS, 0),
        "job": 1,
        "generation": 0,
        "model": "m",
        "now": NOW,
    },
    # An eraser's part reads `erased_subjects`: it is planned inside the erasing statement.
    "SQL_ERASE_TRANSCRIPTS": SUBJECT,
    # Use receipts (usage/sql.py).
    "SQL_FACT_IDS": {"subject": "s-1", "keys": ["seat", "meal"]},
    "SQL_SWEEP_USES": {"cutoff": NOW, "limit": 1000},
    "SQL_TAKE_JOB_USES": {"job": None, "limit": 1000},
    # The receipts' eraser parts read `erased_facts` / `erased_subjects`.
    "USAGE_ERASE_FACTS_SQL": {
        "facts": "[]",
        "matches": "[]",
        "action": "deleted",
        "reason": "",
        "now": NOW,
    },
    "USAGE_ERASE_SUBJECTS_SQL": SUBJECT,
    "USAGE_ERASE_WAITING_SQL": {
        "facts": "[]",
        "matches": "[]",
        "action": "deleted",
        "reason": "",
        "now": NOW,
    },
    # Memory quality (quality/sql.py): the sample items' eraser parts, and the signals.
    "QUALITY_ERASE_FACTS_SQL": {
        "facts": "[]",
        "matches": "[]",
        "action": "deleted",
        "reason": "",
        "now": NOW,
    },
    "QUALITY_ERASE_SUBJECTS_SQL": SUBJECT,
    "SQL_LEARNED_SIGNALS": {"since": NOW},
}
# An eraser's part -> the erasing statement it is planned inside.
ERASER_PARTS = {
    "QUALITY_ERASE_FACTS_SQL": "SQL_ERASE_FACTS",
    "QUALITY_ERASE_SUBJECTS_SQL": "SQL_ERASE_SUBJECT",
    "SQL_ERASE_TRANSCRIPTS": "SQL_ERASE_SUBJECT",
    "USAGE_ERASE_FACTS_SQL": "SQL_ERASE_FACTS",
    "USAGE_ERASE_SUBJECTS_SQL": "SQL_ERASE_SUBJECT",
    "USAGE_ERASE_WAITING_SQL": "SQL_ERASE_FACTS",
}
# The erasing statements: psycopg.sql templates with the erasers' `{erasers}` placeholder.
ERASING_STATEMENTS = {"SQL_ERASE_FACTS", "SQL_ERASE_SUBJECT"}
# Templates around a lock statement (`{lock}`), composed by `db.locked_write` -> the lock.
LOCK_TEMPLATES = {"SQL_LOCK_THEN_GENERIC_PLANS": "SQL_LOCK_SUBJECT_ONLY"}


def _statements(module: ModuleType) -> dict[str, str]:
    """The module's own string constants (not the table names it imports)."""
    imported = (
        set(vars(facts_tables))
        | set(vars(extraction_tables))
        | set(vars(usage_tables))
        | set(vars(quality_tables))
    )
    return {
        name: value
        for name, value in vars(module).items()
        if name.isupper()
        and isinstance(value, str)
        and name not in NOT_STATEMENTS
        and name not in imported
    }


STATEMENTS = {
    **_statements(db_sql),
    **_statements(facts_sql),
    **_statements(extraction_sql),
    **_statements(usage_sql),
    **_statements(quality_sql),
}


def _explain(sql: str, params: Any) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}", params)
        return cursor.fetchall()


def test_every_statement_has_a_sample():
    assert set(STATEMENTS) - set(SAMPLES) == set(), "give each new statement a sample here"
    assert set(SAMPLES) - set(STATEMENTS) == set(), "a sample for a statement that is gone"


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_postgresql_plans_the_statement(name):
    sql = STATEMENTS[name]
    if name in ERASER_PARTS:  # planned inside its erasing statement, as its only eraser
        sql = erasure.erasing_statement(STATEMENTS[ERASER_PARTS[name]], (sql,))
    elif name in ERASING_STATEMENTS:  # with no eraser: its placeholder empty
        sql = erasure.erasing_statement(sql, ())
    elif name in LOCK_TEMPLATES:  # around the lock it is sent with
        sql = lock_then_generic_plans(STATEMENTS[LOCK_TEMPLATES[name]])
    if name in KEEP_CONDITIONS:
        sql = f"SELECT 1 FROM {KEEP_CONDITIONS[name]} AS t WHERE {sql}"
    assert _explain(sql, SAMPLES[name])


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["SQL_ERASE_FACTS", "SQL_ERASE_SUBJECT"])
def test_the_erasing_statements_plan_with_every_registered_eraser(name):
    # The parts that statement really gets: an eraser may apply to single facts only
    # (on_subject=False, e.g. privacy's outbox part, which reads `v` and `gone`) or the reverse.
    registrations, _python = erasure._split(on_facts=name == "SQL_ERASE_FACTS")
    assert registrations, "the apps register their erasers' SQL"
    sql = erasure._with_erasers(STATEMENTS[name], registrations)
    assert "{erasers}" not in sql
    assert all(f'"eraser_{n}" AS ({r.sql})' in sql for n, r in enumerate(registrations))
    assert _explain(sql, SAMPLES[name])


def test_the_job_statements_agree_with_the_model():
    columns = tuple(field.column for field in ExtractionJob._meta.concrete_fields)
    assert columns == extraction_sql.JOB_COLUMNS
    returned = ", ".join(f"j.{column}" for column in columns)
    finished = ", ".join(f"'{status.value}'" for status in sorted(FINISHED_STATUSES))
    for name in ("SQL_BEGIN", "SQL_BEGIN_IN_TRANSACTION", "SQL_SUCCEED"):
        sql = " ".join(STATEMENTS[name].split())
        assert f"j.status NOT IN ({finished})" in sql, name
        if name != "SQL_SUCCEED":
            assert f"RETURNING {returned}," in sql, name
