"""The MemoryStore contract on DjangoMemoryStore's default path, the native async one: reads and
writes on its own psycopg pool (connections of its own), so the data must be committed
(transactional tests, which tests/conftest.py leaves on the default). The pool lives in one event
loop for the module, as in an agent host."""

from __future__ import annotations

import asyncio

import pytest

from memoryadmin.facts import selectors
from memoryadmin.facts.actors import ActorKind
from memoryadmin.facts.models import FactEvent
from memoryadmin.facts.store import DjangoMemoryStore
from memoryadmin.facts.validation import session_tag

from .store_contract import MemoryStoreContract, fact, run

pytestmark = pytest.mark.django_db(transaction=True)


class OnHostLoop:
    """Runs the store's coroutines on the host's loop (where its pool lives)."""

    def __init__(self, store: DjangoMemoryStore, loop: asyncio.AbstractEventLoop) -> None:
        self._store = store
        self._loop = loop

    def __getattr__(self, name: str):
        method = getattr(self._store, name)

        async def call(*args, **kwargs):
            future = asyncio.run_coroutine_threadsafe(method(*args, **kwargs), self._loop)
            return await asyncio.wrap_future(future)

        return call


class TestNativeDjangoMemoryStore(MemoryStoreContract):
    @pytest.fixture
    def store(self, host_loop):
        store = DjangoMemoryStore(session_id="sess-1234")
        assert store.native  # the default
        return OnHostLoop(store, host_loop)


class TestNativeDjangoMemoryStoreWithPlanInLockOff(TestNativeDjangoMemoryStore):
    """The same contract with the delete's tricks off (no server-side function, and
    `DATABASE_PLAN_IN_LOCK`: a SET and a RESET around the erasing statement instead of the
    request inside the lock)."""

    @pytest.fixture(autouse=True)
    def _off(self, settings):
        settings.DATABASE_LOCKED_FUNCTIONS = False
        settings.DATABASE_PLAN_IN_LOCK = False


class TestNativeDjangoMemoryStoreWithLockedFunctionsOff(TestNativeDjangoMemoryStore):
    """The same contract without the delete's server-side function (`DATABASE_LOCKED_FUNCTIONS`:
    the lock and the erasing statement pipelined, the plan asked for inside the lock)."""

    @pytest.fixture(autouse=True)
    def _off(self, settings):
        settings.DATABASE_LOCKED_FUNCTIONS = False


def test_writes_are_audited_as_the_agent_with_the_session_tag_only(host_loop):
    store = OnHostLoop(DjangoMemoryStore(session_id="raw-session-secret"), host_loop)
    run(store.upsert_facts, "t-1", [fact("meal", "Vegetarian meals")])
    event = FactEvent.objects.get(subject_id="t-1", key="meal")
    assert event.actor_kind == ActorKind.AGENT
    assert event.session_tag == session_tag("raw-session-secret") == event.session_tag[:12]
    assert len(event.session_tag) == 12
    [got] = run(store.get_facts, "t-1")
    assert got.source_session_id == session_tag("raw-session-secret")
    assert "raw-session-secret" not in str(FactEvent.objects.values_list())


def test_the_agents_new_value_on_the_native_path_clears_who_rewrote_it(host_loop):
    from memoryadmin.facts import services
    from memoryadmin.facts.actors import Actor
    from memoryadmin.facts.models import MemoryFact

    store = OnHostLoop(DjangoMemoryStore(session_id="sess-1234"), host_loop)
    run(store.upsert_facts, "t-1", [fact("meal", "Vegetarian meals")])
    services.fact_edit(
        subject_id="t-1", key="meal", value="Vegan meals", expected_version=1,
        actor=Actor.customer("t-1"),
    )  # fmt: skip
    assert MemoryFact.objects.get(subject_id="t-1", key="meal").rewritten_by == "customer"
    run(store.upsert_facts, "t-1", [fact("meal", "Pescatarian meals")])
    assert MemoryFact.objects.get(subject_id="t-1", key="meal").rewritten_by == ""


def test_native_reads_equal_the_selectors_row_for_row(host_loop):
    native = OnHostLoop(DjangoMemoryStore(native=True), host_loop)
    via_django = DjangoMemoryStore(native=False)
    run(
        native.upsert_facts,
        "n-1",
        [
            fact("seat", "Prefers aisle seats"),
            fact("overnight", "Avoids overnight flights", "constraint"),
            fact("meal", "偏好素食"),
        ],
    )
    for method, args in [
        ("get_facts", ()),
        ("tier_one", ()),
        ("search_facts", ("AISLE 素食",)),
        ("purge_generation", ()),
    ]:
        assert run(getattr(native, method), "n-1", *args) == run(
            getattr(via_django, method), "n-1", *args
        )
    assert [f.key for f in selectors.facts_for_agent("n-1")] == ["seat", "overnight", "meal"]


def test_native_upsert_writes_the_same_rows_and_audit_events_as_the_service(host_loop):
    from memoryadmin.facts.models import FactEvent, MemoryFact

    batch = [fact("seat", "Prefers aisle seats"), fact("mobility", "Uses a wheelchair")]
    native = OnHostLoop(DjangoMemoryStore(native=True, session_id="s-1"), host_loop)
    via_django = DjangoMemoryStore(native=False, session_id="s-1")
    run(native.upsert_facts, "n-native", batch)
    run(via_django.upsert_facts, "n-django", batch)
    run(native.upsert_facts, "n-native", [fact("seat", "Prefers window seats")])
    run(via_django.upsert_facts, "n-django", [fact("seat", "Prefers window seats")])

    def written(subject: str) -> tuple[list, list]:
        facts = list(
            MemoryFact.objects.filter(subject_id=subject)
            .order_by("id")
            .values_list(
                "key",
                "value",
                "category",
                "status",
                "sensitive",
                "version",
                "source_session_id",
                "origin",
            )
        )
        events = [
            (
                e.key,
                e.action,
                e.actor_kind,
                e.actor_label,
                e.reason,
                e.session_tag,
                e.before and {k: v for k, v in e.before.items() if k != "expires_at"},
                e.after and {k: v for k, v in e.after.items() if k != "expires_at"},
            )
            for e in FactEvent.objects.filter(subject_id=subject).order_by("id")
        ]
        return facts, events

    assert written("n-native") == written("n-django")
    assert [e[1] for e in written("n-native")[1]] == ["created", "created", "updated"]


def test_native_facts_behave_as_validated_models(host_loop):
    """The native path builds its MemoryFact objects without validation (the rows are ours):
    they must be indistinguishable from validated ones for whatever an agent host does."""
    from memoryadmin_client.types import MemoryFact

    native = OnHostLoop(DjangoMemoryStore(native=True, session_id="sess-9"), host_loop)
    run(
        native.upsert_facts, "n-wire", [fact("overnight", "Avoids overnight flights", "constraint")]
    )
    [got] = run(native.get_facts, "n-wire")
    validated = MemoryFact.model_validate(got.model_dump())
    assert got == validated and hash(got) == hash(validated)
    assert got.model_dump_json() == validated.model_dump_json()
    assert got.model_fields_set == validated.model_fields_set
    assert got.category == "constraint" and len(got.source_session_id or "") == 12
    with pytest.raises(Exception, match="frozen"):
        got.value = "changed"  # type: ignore[misc]


def test_concurrent_native_reads_each_get_their_own_travellers_facts(host_loop):
    """Reads of one event loop share a connection kept for them, and fall back to the pool
    when it is busy: under concurrency every read still answers for its own traveller."""
    native = DjangoMemoryStore(native=True)
    for n in range(12):
        run(
            OnHostLoop(native, host_loop).upsert_facts,
            f"n-c{n}",
            [fact("seat", f"Seat wish number {n}")],
        )

    async def all_at_once():
        return await asyncio.gather(
            *(
                getattr(native, method)(f"n-c{n}")
                for n in range(12)
                for method in ("get_facts", "tier_one")
            )
        )

    results = asyncio.run_coroutine_threadsafe(all_at_once(), host_loop).result(30)
    expected = [[f"Seat wish number {n}"] for n in range(12) for _ in range(2)]
    assert [[f.value for f in facts] for facts in results] == expected
