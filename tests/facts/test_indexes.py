"""Every index on the memory tables, with what uses it. Each update of a fact rewrites every
index of memory_fact, so an index nobody needs is a cost on the agent's hot path: adding one
means adding it here with its purpose."""

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db

PURPOSE = {
    ("memory_fact", "memory_fact_pkey"): "primary key; fact_upsert updates rows by id",
    ("memory_fact", "memory_fact_subject_key_uniq"): (
        "one fact per (traveller, key); every agent read and write names one traveller "
        "(subject_id leads), fact lookups by key, the FK to memory_subject"
    ),
    ("memory_fact", "memory_fact_expires_at"): (
        "partial (expires_at not null): the retention sweep finds expired facts"
    ),
    ("memory_fact", "memory_fact_pending_review"): (
        "partial (status = pending_review): the staff review queue, oldest first"
    ),
    ("memory_fact", "memory_fact_value_trgm"): (
        "GIN trigram, partial (not sensitive): the staff search by words in the values of facts "
        "that are not sensitive (ILIKE); no sensitive value is in it"
    ),
    ("memory_fact_event", "memory_fact_event_pkey"): "primary key",
    ("memory_fact_event", "fact_event_subject_hash"): (
        "a fact's history by the keyed hash each event stores, and finding a fact's events "
        "when it is erased (the erasure then updates no indexed column: a HOT update)"
    ),
    ("memory_fact_event", "fact_event_subject_time"): "a traveller's timeline, newest first",
    ("memory_fact_event", "fact_event_receipt"): (
        "partial (receipt not empty: subject_cleared events): a forget-everything receipt by "
        "number, on a column of its own (an index on an expression of `after` would make "
        "every redaction write every index)"
    ),
    ("memory_fact_event", "memory_fact_event_created_at_44147f3f"): (
        "the audit retention sweep deletes the oldest events"
    ),
    ("memory_fact_event", "fact_event_actor_user"): (
        "partial (actor_user not null): FK, deleting a staff user sets actor_user to NULL; "
        "the events of the agent, extraction and the sweeps are not in it"
    ),
    ("memory_subject", "memory_subject_pkey"): "primary key",
    ("memory_subject", "memory_subject_subject_id_key"): (
        "one row per traveller; the per-traveller write lock (SELECT ... FOR UPDATE)"
    ),
    ("memory_subject", "memory_subject_subject_id_cb33efe9_like"): (
        "staff search by traveller id prefix (LIKE 'prefix%')"
    ),
    ("memory_subject", "memory_subject_held"): (
        "partial (legal_hold): retention's kept rows start from the few held travellers "
        "(the drop by month, the sweeps' exclusions)"
    ),
    ("memory_subject", "memory_subject_use_paused"): (
        "partial (memory_use_paused): the agent's reads check the few paused travellers "
        "by an index-only lookup"
    ),
}


def test_every_index_on_the_memory_tables_has_a_known_purpose():
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename, indexname FROM pg_indexes WHERE schemaname = current_schema()"
            " AND tablename IN ('memory_fact', 'memory_fact_event', 'memory_subject')"
        )
        found = set(cursor.fetchall())
    assert found == set(PURPOSE), (
        f"unlisted: {sorted(found - set(PURPOSE))}; gone: {sorted(set(PURPOSE) - found)}"
    )


def test_memory_fact_keeps_only_four_indexes_plus_the_staff_search():
    """It had seven, four of them never used by the agent's reads or writes. The fifth, a GIN
    trigram index on value, serves the support dashboard's search (issue 8)."""
    assert sum(1 for table, _ in PURPOSE if table == "memory_fact") == 5
