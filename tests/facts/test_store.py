"""The MemoryStore contract against the in-process DjangoMemoryStore."""

import pytest

from memoryadmin.facts.actors import ActorKind
from memoryadmin.facts.models import FactEvent
from memoryadmin.facts.store import DjangoMemoryStore
from memoryadmin.facts.validation import session_tag

from .store_contract import MemoryStoreContract, fact, run

pytestmark = [pytest.mark.django_db]


class TestDjangoMemoryStore(MemoryStoreContract):
    @pytest.fixture
    def store(self):
        return DjangoMemoryStore(session_id="sess-1234")


def test_writes_are_audited_as_the_agent_with_the_session_tag_only():
    store = DjangoMemoryStore(session_id="raw-session-secret")
    run(store.upsert_facts, "t-1", [fact("meal", "Vegetarian meals")])
    event = FactEvent.objects.get(subject_id="t-1", key="meal")
    assert event.actor_kind == ActorKind.AGENT
    assert event.session_tag == session_tag("raw-session-secret") == event.session_tag[:12]
    assert len(event.session_tag) == 12
    [got] = run(store.get_facts, "t-1")
    assert got.source_session_id == session_tag("raw-session-secret")
    assert "raw-session-secret" not in str(FactEvent.objects.values_list())


def test_the_agents_new_value_on_the_native_path_clears_who_rewrote_it():
    from memoryadmin.facts import services
    from memoryadmin.facts.actors import Actor
    from memoryadmin.facts.models import MemoryFact

    store = DjangoMemoryStore(session_id="sess-1234")
    run(store.upsert_facts, "t-1", [fact("meal", "Vegetarian meals")])
    services.fact_edit(
        subject_id="t-1", key="meal", value="Vegan meals", expected_version=1,
        actor=Actor.customer("t-1"),
    )  # fmt: skip
    assert MemoryFact.objects.get(subject_id="t-1", key="meal").rewritten_by == "customer"
    run(store.upsert_facts, "t-1", [fact("meal", "Pescatarian meals")])
    assert MemoryFact.objects.get(subject_id="t-1", key="meal").rewritten_by == ""
