"""The services the dashboard added: revealing a sensitive value, and bulk actions."""

from __future__ import annotations

import pytest

from memoryadmin.facts import selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactInvalid, FactNotFound
from memoryadmin.facts.models import FactEvent, MemoryFact
from tests.factories import FactFactory, UserFactory

pytestmark = [pytest.mark.django_db]

S = "T-SVC"


@pytest.fixture
def staff():
    return UserFactory(username="sam")


def test_reveal_records_who_and_why_but_not_the_value(staff):
    FactFactory(subject_id=S, key="health", value="Carries insulin")
    fact = services.fact_reveal(
        subject_id=S, key="health", actor=Actor.staff(staff), reason="Customer asked"
    )
    assert fact.value == "Carries insulin"
    event = FactEvent.objects.get(action="value_revealed")
    assert (event.actor_kind, event.actor_user, event.reason) == ("staff", staff, "Customer asked")
    assert event.before is None and event.after is None
    assert selectors.subject_fact(S, "health").version == 1  # looking changes nothing


def test_reveal_without_a_reason_is_refused_and_leaves_no_event(staff):
    FactFactory(subject_id=S, key="health", value="Carries insulin")
    with pytest.raises(FactInvalid):
        services.fact_reveal(subject_id=S, key="health", actor=Actor.staff(staff), reason="  ")
    assert not FactEvent.objects.filter(action="value_revealed").exists()


@pytest.mark.parametrize(
    ("action", "event"),
    [("expire", "expired"), ("flag_sensitive", "flagged_sensitive"), ("delete", "deleted")],
)
def test_bulk_writes_one_event_per_fact_with_the_reason(staff, action, event):
    for key in ("a", "b", "c"):
        FactFactory(subject_id=S, key=key, value=f"value {key}")
    done = services.facts_bulk_apply(
        subject_id=S, keys=["a", "b"], action=action, actor=Actor.staff(staff), reason="Cleanup"
    )
    assert done == 2
    events = FactEvent.objects.filter(subject_id=S, action=event)
    assert events.count() == 2 and {e.reason for e in events} == {"Cleanup"}
    assert selectors.subject_fact(S, "c").version == 1


def test_bulk_is_all_or_nothing(staff):
    FactFactory(subject_id=S, key="a", value="value a")
    with pytest.raises(FactNotFound):
        services.facts_bulk_apply(
            subject_id=S,
            keys=["a", "gone"],
            action="delete",
            actor=Actor.staff(staff),
            reason="Cleanup",
        )
    assert MemoryFact.objects.filter(subject_id=S, key="a").exists()
    assert not FactEvent.objects.filter(action="deleted").exists()


def test_bulk_refuses_an_unknown_action_or_no_keys(staff):
    with pytest.raises(FactInvalid):
        services.facts_bulk_apply(
            subject_id=S, keys=["a"], action="drop", actor=Actor.staff(staff), reason="r"
        )
    with pytest.raises(FactInvalid):
        services.facts_bulk_apply(
            subject_id=S, keys=[], action="expire", actor=Actor.staff(staff), reason="r"
        )
