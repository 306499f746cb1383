"""The store contract on the default native async path with its fenced speed tricks off
(FASTPATH_STORE_RESIDENT_CONNECTION, FASTPATH_PYDANTIC_CONSTRUCT): each on its own and every
trick at once. The same answers, restricted facts out of every read, either way."""

from __future__ import annotations

import pytest

from memoryadmin.db import fastpaths
from memoryadmin.facts.store import DjangoMemoryStore
from tests.support.fastpaths import ALL_OFF, NATIVE_TRICKS, turn_off

from .store_contract import MemoryStoreContract, fact, run
from .test_store_native import OnHostLoop

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _nothing_found_broken():
    fastpaths.broken_reset()
    yield
    fastpaths.broken_reset()


class TestNativeStoreWithTricksOff(MemoryStoreContract):
    @pytest.fixture(
        autouse=True,
        params=[ALL_OFF, *(pytest.param((name,), id=f"{name}-off") for name in NATIVE_TRICKS)],
    )
    def _off(self, request, settings):
        turn_off(settings, request.param)

    @pytest.fixture
    def store(self, host_loop):
        store = DjangoMemoryStore(session_id="sess-1234")
        assert store.native
        return OnHostLoop(store, host_loop)


def test_native_reads_are_the_same_with_and_without_the_tricks(settings, host_loop):
    store = OnHostLoop(DjangoMemoryStore(session_id="sess-1"), host_loop)
    facts = [
        fact("seat", "Prefers aisle seats"),
        fact("meal", "素食", "preference"),
        fact("connection", "At most one connection", "constraint"),
    ]
    run(store.upsert_facts, "nfp-1", facts)
    reads = [
        (store.get_facts, ("nfp-1",)),
        (store.tier_one, ("nfp-1",)),
        (store.search_facts, ("nfp-1", "seat connection")),
    ]
    on = [run(call, *args) for call, args in reads]
    assert [len(answer) for answer in on] == [3, 3, 2]
    turn_off(settings, NATIVE_TRICKS)
    off = [run(call, *args) for call, args in reads]
    assert off == on
    assert [[f.model_dump() for f in answer] for answer in off] == [
        [f.model_dump() for f in answer] for answer in on
    ]
    assert [[f.model_fields_set for f in answer] for answer in off] == [
        [f.model_fields_set for f in answer] for answer in on
    ]
