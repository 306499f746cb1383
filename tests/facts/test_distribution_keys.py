"""Ready to distribute (issue 31), what the catalog proves: every table keyed by traveller that
Citus would distribute on `subject_id` (docs/ARCHITECTURE.md, "Distributing by traveller") has
`subject_id` in every primary key and unique index, but for the surrogate keys listed here with
the reason each still stands; and every table with a `subject_id` column is either distributed
or named as local to the coordinator, so a new one must be classified."""

from __future__ import annotations

import pytest
from django.db import connection

# Co-located on subject_id (the Citus path's create_distributed_table list).
DISTRIBUTED = (
    "memory_subject",
    "memory_fact",
    "memory_fact_event",
    "memory_use",
    "extraction_job",
)
# Tables with a subject_id column that stay on the coordinator (ARCHITECTURE.md says why).
LOCAL = (
    "api_idempotency_record",
    "portal_link",
    "portal_session",
    "privacy_request",
    "privacy_webhook_outbox",
    "quality_sample_item",
    "staff_access",
)
# Unique indexes without subject_id that must change before create_distributed_table runs
# (ARCHITECTURE.md, "What the app must still change"): Django's surrogate `id` keys, which
# URLs, the admin and the sweeps' chunks address, and the job's public id in its URL.
STILL_WITHOUT_SUBJECT = {
    "memory_subject_pkey",
    "memory_fact_pkey",
    "extraction_job_pkey",
    "extraction_job_public_id_94cba630_uniq",
}

SQL_TABLES_WITH_SUBJECT = """
SELECT c.relname FROM pg_class AS c
JOIN pg_namespace AS n ON n.oid = c.relnamespace
JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attname = 'subject_id' AND NOT a.attisdropped
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
ORDER BY c.relname
"""

# Every unique index (primary keys among them) of the table, with whether subject_id is one of
# its columns.
SQL_UNIQUE_INDEXES = """
SELECT i.relname, x.indisprimary,
       EXISTS (SELECT 1 FROM unnest(x.indkey) AS k(attnum)
               JOIN pg_attribute AS a ON a.attrelid = x.indrelid AND a.attnum = k.attnum
               WHERE a.attname = 'subject_id')
FROM pg_index AS x JOIN pg_class AS i ON i.oid = x.indexrelid
WHERE x.indrelid = to_regclass(%s) AND x.indisunique
ORDER BY i.relname
"""


def _unique_indexes(table: str) -> list[tuple[str, bool, bool]]:
    with connection.cursor() as cursor:
        cursor.execute(SQL_UNIQUE_INDEXES, [table])
        return cursor.fetchall()


@pytest.mark.django_db
def test_every_table_with_a_traveller_column_is_distributed_or_named_local():
    with connection.cursor() as cursor:
        cursor.execute(SQL_TABLES_WITH_SUBJECT)
        tables = {row[0] for row in cursor.fetchall()}
    assert tables == set(DISTRIBUTED) | set(LOCAL)


@pytest.mark.django_db
@pytest.mark.parametrize("table", DISTRIBUTED)
def test_every_unique_key_of_a_distributed_table_holds_subject_id(table):
    indexes = _unique_indexes(table)
    assert any(primary for _name, primary, _has in indexes), f"{table} has a primary key"
    lacking = {name for name, _primary, has in indexes if not has}
    assert lacking <= STILL_WITHOUT_SUBJECT, f"{table}: unique without subject_id: {lacking}"


@pytest.mark.django_db
def test_the_history_and_the_receipts_keys_hold_the_traveller():
    """The two partitioned tables of the traveller (issue 31's migrations 0014 and usage 0004)."""
    for table, key in (
        ("memory_fact_event", "PRIMARY KEY (id, created_at, subject_id)"),
        ("memory_use", "PRIMARY KEY (id, used_at, subject_id)"),
    ):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
                " WHERE conrelid = to_regclass(%s) AND contype = 'p'",
                [table],
            )
            assert cursor.fetchone()[0] == key


@pytest.mark.django_db
def test_the_allow_list_holds_only_indexes_that_still_lack_subject_id():
    """A key fixed later (or renamed) must leave the list: it names what is left to change."""
    lacking = {
        name for table in DISTRIBUTED for name, _primary, has in _unique_indexes(table) if not has
    }
    assert lacking == STILL_WITHOUT_SUBJECT
