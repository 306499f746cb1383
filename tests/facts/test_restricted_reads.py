"""The agent's reads leave a restricted fact out and stay the statements they were: the added
condition is a filter on the rows the traveller's index already finds (EXPLAIN: the same
index), and the store's native path (its own connections, so committed data) agrees."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from memoryadmin.facts import services, sql
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import MemoryFact
from memoryadmin.facts.store import DjangoMemoryStore
from tests.factories import FactFactory
from tests.support.fastpaths import NATIVE_TRICKS, turn_off

from .store_contract import fact, run
from .test_store_native import OnHostLoop

S = "FF-RR-0001"
PARAMS = {"subject": S, "now": "2026-12-07T12:00:00Z", "key": "seat", "terms": "seat", "cap": 5}
READS = ("SQL_FACTS", "SQL_FACT", "SQL_SEARCH", "SQL_TIER_ONE")


def _indexes(plan: dict) -> set[str]:
    found = {plan["Index Name"]} if "Index Name" in plan else set()
    for child in plan.get("Plans", []):
        found |= _indexes(child)
    return found


@pytest.mark.django_db
@pytest.mark.parametrize("name", READS)
def test_each_read_filters_restricted_facts_on_the_travellers_index(name):
    statement = getattr(sql, name)
    assert "f.restricted_at IS NULL" in statement
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # plan as for a big table
        cursor.execute("EXPLAIN (FORMAT JSON) " + statement, PARAMS)
        raw = cursor.fetchone()[0]
    (plan,) = raw if isinstance(raw, list) else json.loads(raw)
    # the first node of the main query reads memory_fact through the traveller's unique index
    assert "memory_fact_subject_key_uniq" in _indexes(plan["Plan"])


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("off", [(), NATIVE_TRICKS], ids=["tricks-on", "tricks-off"])
def test_the_native_store_leaves_a_restricted_fact_out(host_loop, settings, off):
    turn_off(settings, off)
    FactFactory(subject_id=S, key="seat", value="Middle seat")
    FactFactory(subject_id=S, key="meal", value="Vegetarian seat-side meal")
    services.fact_restrict(subject_id=S, key="seat", actor=Actor.customer(S), reason="portal")
    store = OnHostLoop(DjangoMemoryStore(session_id="sess-1"), host_loop)
    assert [f.key for f in run(store.get_facts, S)] == ["meal"]
    assert [f.key for f in run(store.tier_one, S)] == ["meal"]
    assert [f.key for f in run(store.search_facts, S, "seat")] == ["meal"]
    # the agent's save on the native path leaves it alone too
    run(store.upsert_facts, S, [fact("seat", "Window")])
    assert MemoryFact.objects.get(subject_id=S, key="seat").value == "Middle seat"
