"""Reads: what each audience gets, in a fixed number of queries."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memoryadmin.facts import selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import EventAction
from tests.factories import FactFactory

pytestmark = pytest.mark.django_db
STAFF = Actor.system("test")


@pytest.mark.parametrize("count", [2, 40])
def test_agent_reads_cost_constant_queries(count, django_assert_max_num_queries):
    for index in range(count):
        FactFactory(subject_id="busy", key=f"pref_{index}", value=f"Preference {index}")
    with django_assert_max_num_queries(1):
        assert len(selectors.facts_for_agent("busy")) == count
    with django_assert_max_num_queries(2):
        assert len(selectors.tier_one("busy")) == min(count, 8)
    with django_assert_max_num_queries(1):
        assert len(selectors.facts_search("busy", "preference")) == count


def test_subject_facts_shows_staff_everything_the_agent_does_not_see():
    FactFactory(subject_id="s", key="seat", value="Aisle")
    FactFactory(subject_id="s", key="mobility", value="Uses a wheelchair", actor=Actor.agent("h"))
    FactFactory(subject_id="s", key="meal", value="Vegetarian")
    services.fact_set_expiry(
        subject_id="s", key="meal", expires_at=timezone.now() - timedelta(days=1), actor=STAFF
    )
    assert [f.key for f in selectors.facts_for_agent("s")] == ["seat"]
    assert {f.key for f in selectors.subject_facts("s")} == {"seat", "mobility", "meal"}


def test_fact_history_is_oldest_first_and_timeline_newest_first():
    FactFactory(subject_id="s", key="seat", value="Window")
    FactFactory(subject_id="s", key="seat", value="Aisle")
    FactFactory(subject_id="s", key="meal", value="Vegetarian")
    assert [e.action for e in selectors.fact_history("s", "seat")] == [
        EventAction.CREATED,
        EventAction.UPDATED,
    ]
    assert [(e.key, e.action) for e in selectors.subject_timeline("s")] == [
        ("meal", EventAction.CREATED),
        ("seat", EventAction.UPDATED),
        ("seat", EventAction.CREATED),
    ]


def test_memory_settings_singleton_has_the_upstream_defaults():
    settings_row = selectors.memory_settings()
    assert (settings_row.tier_one_cap, settings_row.max_new_facts, settings_row.memory_model) == (
        8,
        3,
        "claude-haiku-4-5-20251001",
    )
    assert selectors.memory_settings().pk == settings_row.pk == 1
