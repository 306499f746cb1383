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


@pytest.mark.django_db(transaction=True)
def test_0012_fills_who_rewrote_each_current_value_from_the_history():
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        old = _migrate([("facts", "0011_issue31_event_partitions")])
        user = old.get_model("auth", "User").objects.create(
            username="mlin", first_name="Mei", last_name="Lin"
        )
        subject = old.get_model("facts", "Subject").objects.create(subject_id="T-0012")
        event_model = old.get_model("facts", "FactEvent")
        with connection.cursor() as cursor:  # rows as 0011 held them (the ORM's are guarded)
            for key in ("by_staff", "back_to_agent", "category_only", "added_by_staff"):
                cursor.execute(
                    "INSERT INTO memory_fact (subject_id, key, value, category, updated_at,"
                    " created_at, origin, status, sensitive, expiry_pinned, version,"
                    " source_session_id) VALUES (%s, %s, 'v', 'preference', now(), now(),"
                    " 'extraction', 'active', false, false, 1, '')",
                    [subject.subject_id, key],
                )

        def event(key, action, kind, before=None, after=None, label="", user=None):
            event_model.objects.create(
                subject_id="T-0012", key=key, key_hash=f"#{key}", action=action,
                actor_kind=kind, actor_label=label, actor_user=user,
                before=before and {"value": before}, after=after and {"value": after},
            )  # fmt: skip

        event("by_staff", "created", "extraction", after="a")
        event("by_staff", "updated", "staff", "a", "b", label="mlin", user=user)
        event("by_staff", "expired", "customer")  # not a value change
        event("back_to_agent", "created", "agent", after="a")
        event("back_to_agent", "updated", "customer", "a", "b", label="traveller:T-0012")
        event("back_to_agent", "updated", "extraction", "b", "c")
        event("category_only", "updated", "customer", "a", "b", label="traveller:T-0012")
        event("category_only", "updated", "staff", "b", "b", label="someone")  # same words
        event("added_by_staff", "created", "staff", after="a", label="mlin", user=user)
    finally:
        _migrate(latest)

    from memoryadmin.facts.models import MemoryFact

    written = {
        fact.key: (fact.rewritten_by, fact.rewritten_by_label)
        for fact in MemoryFact.objects.filter(subject_id="T-0012")
    }
    assert written == {
        "by_staff": ("staff", "Mei Lin"),
        "back_to_agent": ("", ""),
        "category_only": ("customer", ""),  # never the traveller's id
        "added_by_staff": ("", ""),  # its origin already says staff entered it
    }
