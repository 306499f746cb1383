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


def test_memory_settings_tolerates_a_missing_row_and_a_read_never_creates_it(
    django_assert_max_num_queries,
):
    from memoryadmin.facts.models import MemorySettings

    MemorySettings.objects.all().delete()  # as after a transactional test's flush
    assert selectors.memory_settings().tier_one_cap == 8
    assert selectors.tier_one("nobody") == []
    assert not MemorySettings.objects.exists()


def test_the_settings_row_comes_from_a_data_migration():
    from importlib import import_module

    from django.apps import apps

    from memoryadmin.facts.models import MemorySettings

    MemorySettings.objects.all().delete()
    import_module("memoryadmin.facts.migrations.0002_memory_settings_row").create_row(apps, None)
    assert MemorySettings.objects.filter(pk=1).exists()


def test_settings_and_rules_are_cached_and_a_change_is_seen_at_once(
    django_assert_num_queries,
):
    from memoryadmin.facts.models import MemorySettings, RetentionRule

    FactFactory(subject_id="c", key="seat", value="Aisle")
    FactFactory(subject_id="c", key="meal", value="Vegetarian")
    selectors.tier_one("c")
    with django_assert_num_queries(1):  # the settings come from the cache
        assert len(selectors.tier_one("c")) == 2
    MemorySettings.objects.update_or_create(pk=1, defaults={"tier_one_cap": 1})
    assert len(selectors.tier_one("c")) == 1
    row = MemorySettings.objects.get(pk=1)
    row.memory_enabled = False
    row.save()
    assert selectors.tier_one("c") == selectors.facts_for_agent("c") == []
    RetentionRule.objects.create(name="short", ttl_days=3)
    assert [rule.name for rule in selectors.retention_rules()] == ["short"]


def test_invalidate_drops_the_cache_after_an_update_that_bypasses_save():
    from memoryadmin.facts.models import MemorySettings

    MemorySettings.objects.get_or_create(pk=1)
    assert selectors.memory_settings().tier_one_cap == 8
    MemorySettings.objects.filter(pk=1).update(tier_one_cap=2)  # no signal
    assert selectors.memory_settings().tier_one_cap == 8  # still cached
    selectors.memory_config_invalidate()
    assert selectors.memory_settings().tier_one_cap == 2


@pytest.mark.bare_cursor  # the production cursor (tests/facts/test_bare_cursor.py)
def test_agent_reads_keep_upstream_order_first_written_and_an_update_keeps_its_place():
    FactFactory(subject_id="o", key="seat", value="Aisle")
    FactFactory(subject_id="o", key="overnight", value="No red-eyes", category="constraint")
    FactFactory(subject_id="o", key="meal", value="Vegetarian")
    FactFactory(subject_id="o", key="connections", value="One at most", category="constraint")
    FactFactory(subject_id="o", key="seat", value="Window")  # updated: keeps its place
    order = ["seat", "overnight", "meal", "connections"]
    assert [f.key for f in selectors.facts_for_agent("o")] == order
    assert [f.key for f in selectors.facts_search("o", "e")] == order  # every fact has an e
    # Constraints in stored order, then the others newest first (seat was updated last).
    assert [f.key for f in selectors.tier_one("o")] == ["overnight", "connections", "seat", "meal"]
    assert [f.key for f in selectors.tier_one("o", cap=3)] == ["overnight", "connections", "seat"]


@pytest.mark.bare_cursor  # the production cursor (tests/facts/test_bare_cursor.py)
def test_search_is_case_insensitive_on_both_sides_and_matches_chinese_text():
    FactFactory(subject_id="z", key="seat", value="偏好靠走道的座位")
    FactFactory(subject_id="z", key="meal", value="Vegetarian MEALS")
    assert [f.key for f in selectors.facts_search("z", "走道")] == ["seat"]
    assert [f.key for f in selectors.facts_search("z", "meals")] == ["meal"]
    assert [f.key for f in selectors.facts_search("z", "VEGETARIAN")] == ["meal"]
    assert [f.key for f in selectors.facts_search("z", "%")] == []  # no LIKE wildcards
    assert [f.key for f in selectors.facts_search("z", "PREFERENCE")] == ["seat", "meal"]


# --- upstream order (issue 7, point 6) ----------------------------------------------------------


def _keys(facts):
    return [fact.key for fact in facts]


@pytest.mark.bare_cursor  # the production cursor (tests/facts/test_bare_cursor.py)
def test_agent_reads_keep_the_order_facts_were_first_written_and_updates_keep_their_place():
    for key, value in [("seat", "Window"), ("meal", "Vegetarian"), ("party", "With spouse")]:
        FactFactory(subject_id="o", key=key, value=value)
    FactFactory(subject_id="o", key="seat", value="Aisle")  # the newest change, same place
    assert _keys(selectors.facts_for_agent("o")) == ["seat", "meal", "party"]
    assert _keys(selectors.facts_search("o", "")) == ["seat", "meal", "party"]
    assert _keys(selectors.facts_search("o", "aisle spouse")) == ["seat", "party"]


@pytest.mark.bare_cursor  # the production cursor (tests/facts/test_bare_cursor.py)
def test_one_batch_is_stored_in_the_batch_order():
    services.fact_upsert(
        subject_id="b",
        facts=[services.FactDraft(k, f"Value {k}") for k in ("zulu", "alpha", "mike")],
        actor=STAFF,
    )
    assert _keys(selectors.facts_for_agent("b")) == ["zulu", "alpha", "mike"]


@pytest.mark.bare_cursor  # the production cursor (tests/facts/test_bare_cursor.py)
def test_tier_one_keeps_constraints_in_stored_order_then_newest_others():
    FactFactory(subject_id="t", key="red_eye", value="No overnight flights", category="constraint")
    FactFactory(subject_id="t", key="pref_a", value="Aisle seats")
    FactFactory(subject_id="t", key="one_stop", value="At most one stop", category="constraint")
    FactFactory(subject_id="t", key="pref_b", value="Vegetarian meals")
    FactFactory(subject_id="t", key="one_stop", value="One stop at most", category="constraint")
    assert _keys(selectors.tier_one("t", cap=3)) == ["red_eye", "one_stop", "pref_b"]


def test_agent_reads_run_as_prepared_statements_and_are_still_counted(
    django_assert_num_queries,
):
    from django.db import connection

    FactFactory(subject_id="p", key="seat", value="Aisle")
    with django_assert_num_queries(1):
        assert [f.key for f in selectors.tier_one("p")] == ["seat"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    assert any("LIMIT greatest(" in text for text in prepared)  # the tier-one statement


def test_behind_a_pooler_agent_reads_prepare_nothing_and_read_the_same(settings):
    """MEMORY_PREPARED_STATEMENTS=false (DATABASE_POOLER=transaction): each statement goes
    unnamed, still bound on the server and read in binary; pgbouncer 1.18 could not carry a named
    one to the next transaction (tests/api/test_pgbouncer_live.py runs them through it)."""
    from django.db import connection

    FactFactory(subject_id="q", key="seat", value="Aisle")
    prepared_read = [(f.key, f.value, f.updated_at) for f in selectors.facts_for_agent("q")]
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
    connection.connection.prepare_threshold = None  # as a new connection behind the pooler
    settings.MEMORY_PREPARED_STATEMENTS = False
    for _ in range(8):  # past psycopg's threshold: would prepare if it could
        plain_read = [(f.key, f.value, f.updated_at) for f in selectors.facts_for_agent("q")]
    assert plain_read == prepared_read
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements")
        assert cursor.fetchone()[0] == 0
