"""Data migrations of the facts app, run forwards on rows written under the schema before them."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE_RECEIPT_COLUMN = [("facts", "0006_event_key_hash"), ("portal", "0002_receipt_lookup_index")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_receipts_written_before_0007_are_found_by_number_after_it():
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        old = _migrate(BEFORE_RECEIPT_COLUMN)
        event_model = old.get_model("facts", "FactEvent")
        event_model.objects.create(
            subject_id="T-old",
            key="",
            key_hash="",
            action="subject_cleared",
            actor_kind="customer",
            after={"facts_deleted": 3, "receipt": "R-AAAA-BBBB-CCCC"},
        )
        event_model.objects.create(
            subject_id="T-plain",
            key="",
            key_hash="",
            action="subject_cleared",
            actor_kind="agent",
            after={"facts_deleted": 0, "purge_generation": 1},
        )
    finally:
        _migrate(latest)

    from memoryadmin.facts import selectors
    from memoryadmin.facts.models import FactEvent

    found = selectors.clear_receipt_get("r-aaaa-bbbb-cccc", subject_id="T-old")
    assert found is not None and (found.number, found.facts_erased) == ("R-AAAA-BBBB-CCCC", 3)
    assert FactEvent.objects.get(subject_id="T-plain").receipt == ""
