"""The read-your-writes decision (`memoryadmin.db.routing.decide`) alone: no database, no Redis.

A read may go to a replica only when the replica is usable and its last look had replayed the
traveller's last write; anything unsure sends it to the primary; Redis is asked only when a
replica could serve and this process does not already know the position; only a definite
answer from Redis may be kept."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryadmin.db.routing import (
    ASK,
    CANNOT_TELL,
    NONE_RECORDED,
    TO_PRIMARY,
    Process,
    Replica,
    Route,
    Written,
    decide,
)

pytestmark = pytest.mark.unit

R1 = Replica("replica1", 100, usable=True)
R2 = Replica("replica2", 200, usable=True)
LAGGING = Replica("replica3", 900, usable=False)  # far ahead, but lagging or down: never read
NEVER_LOOKED = Replica("replica4", None, usable=True)  # replay unknown: counts as 0

CASES = [
    # (replicas, process, written, turn, expected)
    ((), Process(), None, 0, TO_PRIMARY),  # no replica: Redis is not asked
    ((LAGGING,), Process(), None, 0, TO_PRIMARY),  # none usable: Redis is not asked
    ((R1,), Process(pinned=True), None, 0, TO_PRIMARY),  # could not record a write
    ((R1,), Process(pinned=True), Written(0), 0, TO_PRIMARY),
    ((R1,), Process(in_transaction=True), None, 0, TO_PRIMARY),  # sees its own transaction
    ((R1,), Process(in_transaction=True, known=0), None, 0, TO_PRIMARY),
    ((R1,), Process(), None, 0, ASK),  # a replica could serve: the position is needed
    ((R1,), Process(), CANNOT_TELL, 0, TO_PRIMARY),  # Redis down, or its map too young
    ((R1,), Process(), NONE_RECORDED, 0, Route("replica1", keep=True)),
    ((R1,), Process(), Written(100), 0, Route("replica1", keep=True)),  # replayed exactly
    ((R1,), Process(), Written(101), 0, Route(None, keep=True)),  # one byte behind
    ((R1, R2), Process(), Written(150), 0, Route("replica2", keep=True)),  # the one caught up
    ((R1, R2), Process(), Written(150), 1, Route("replica2", keep=True)),
    ((R1, R2), Process(), Written(50), 0, Route("replica1", keep=True)),  # taking turns
    ((R1, R2), Process(), Written(50), 1, Route("replica2", keep=True)),
    ((LAGGING, R1), Process(), Written(500), 0, Route(None, keep=True)),
    ((NEVER_LOOKED,), Process(), Written(0), 0, Route("replica4", keep=True)),
    ((NEVER_LOOKED,), Process(), Written(1), 0, Route(None, keep=True)),
    # What this process already knows decides without Redis, and is not kept again.
    ((R1,), Process(known=100), None, 0, Route("replica1")),
    ((R1,), Process(known=101), None, 0, TO_PRIMARY),
    ((R1,), Process(known=100), CANNOT_TELL, 0, Route("replica1")),
]


@pytest.mark.parametrize(("replicas", "process", "written", "turn", "expected"), CASES)
def test_the_decision_table(replicas, process, written, turn, expected):
    assert decide(replicas, process, written, turn=turn) == expected


replica_lists = st.lists(
    st.builds(
        Replica,
        st.sampled_from(["replica1", "replica2", "replica3"]),
        st.one_of(st.none(), st.integers(0, 2**64 - 1)),
        st.booleans(),
    ),
    max_size=4,
)
processes = st.builds(
    Process,
    st.one_of(st.none(), st.integers(0, 2**64 - 1)),
    st.booleans(),
    st.booleans(),
)
positions = st.one_of(st.none(), st.builds(Written, st.one_of(st.none(), st.integers(0, 2**64))))


@given(replica_lists, processes, positions, st.integers(0, 1000))
def test_a_replica_is_read_only_once_it_has_replayed_the_write(replicas, process, written, turn):
    route = decide(replicas, process, written, turn=turn)
    if route.alias is None:
        return
    needed = process.known if process.known is not None else written.lsn
    chosen = [r for r in replicas if r.alias == route.alias and r.usable]
    assert any((r.replay_lsn or 0) >= needed for r in chosen)
    assert not (process.pinned or process.in_transaction)
    assert not route.ask


@given(replica_lists, processes, positions, st.integers(0, 1000))
def test_only_a_definite_answer_from_redis_is_kept(replicas, process, written, turn):
    route = decide(replicas, process, written, turn=turn)
    if route.keep:
        assert process.known is None and written is not None and written.lsn is not None
    if route.ask:
        assert written is None and process.known is None and route.alias is None
        assert any(r.usable for r in replicas)
