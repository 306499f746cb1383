"""subject_forget: "forget everything" with a receipt that lives in the audit trail."""

from __future__ import annotations

import re

import pytest

from memoryadmin.facts import selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import EventAction, FactEvent, MemoryFact
from tests.factories import FactFactory

pytestmark = pytest.mark.django_db


def test_the_receipt_says_when_and_how_many_and_is_the_clear_event():
    FactFactory(subject_id="T-1", key="a", value="One")
    FactFactory(subject_id="T-1", key="b", value="Two")

    receipt = services.subject_forget(subject_id="T-1", actor=Actor.customer("T-1"), reason="r")

    assert re.fullmatch(
        r"R-[2-9A-HJKMNP-Z]{4}-[2-9A-HJKMNP-Z]{4}-[2-9A-HJKMNP-Z]{4}", receipt.number
    )
    assert receipt.facts_erased == 2
    event = FactEvent.objects.get(action=EventAction.SUBJECT_CLEARED)
    assert event.created_at == receipt.cleared_at
    assert event.after == {"facts_deleted": 2, "purge_generation": 1, "receipt": receipt.number}
    assert not MemoryFact.objects.filter(subject_id="T-1").exists()


def test_a_receipt_is_found_by_number_and_survives_later_erasures():
    FactFactory(subject_id="T-2", key="a", value="One")
    receipt = services.subject_forget(subject_id="T-2", actor=Actor.customer("T-2"))
    FactFactory(subject_id="T-2", key="b", value="Two")
    services.subject_clear(subject_id="T-2", actor=Actor.agent("host"))  # a later plain clear

    found = selectors.clear_receipt_get(f"  {receipt.number.lower()} ")

    assert found == receipt
    assert selectors.clear_receipt_get(receipt.number, subject_id="someone-else") is None
    assert selectors.clear_receipt_get("R-2222-2222-2222") is None
    assert selectors.clear_receipt_get("") is None


def test_a_plain_clear_has_no_receipt_and_its_generation_contract_is_unchanged():
    assert services.subject_clear(subject_id="T-3", actor=Actor.agent("host")) == 1
    assert "receipt" not in FactEvent.objects.get(subject_id="T-3").after


def test_a_receipt_lookup_uses_its_partial_index():
    from django.db import connection

    receipt = services.subject_forget(subject_id="T-4", actor=Actor.customer("T-4"))
    query = FactEvent.objects.filter(action=EventAction.SUBJECT_CLEARED, receipt=receipt.number)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny table: ask what it could use
        plan = query.explain()
        # The history is partitioned by month (issue 31): each partition has its copy of the
        # index, attached to the parent's.
        cursor.execute(
            "SELECT c.relname FROM pg_partition_tree('fact_event_receipt') AS t"
            " JOIN pg_class AS c ON c.oid = t.relid WHERE t.isleaf"
        )
        copies = [row[0] for row in cursor.fetchall()]
    assert copies and any(name in plan for name in copies)
