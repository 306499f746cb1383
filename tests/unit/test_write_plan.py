"""The write plan (facts/services/plan.py) without a database: the rows and events every
writer's version comes from (the agent's upsert, a person's edit, expiry, sensitivity, review),
decided from the current rows and the drafts alone."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User

from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactConflict
from memoryadmin.facts.models import EventAction, FactStatus, MemorySettings, RetentionRule
from memoryadmin.facts.selectors import MemoryConfig
from memoryadmin.facts.services.plan import (
    ABSENT,
    Batch,
    change_plan,
    next_version,
    restate,
    upsert_plan,
)
from memoryadmin.facts.validation import CleanFact, validate_fact

pytestmark = pytest.mark.unit

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
AGENT = Actor.agent("host")
MEI = Actor.staff(User(username="mlin", first_name="Mei", last_name="Lin"))
TRAVELLER = Actor.customer("t-1")


def config(*rules: RetentionRule, memory_enabled: bool = True) -> MemoryConfig:
    return MemoryConfig(
        settings=MemorySettings(memory_enabled=memory_enabled), rules=rules, loaded_at=0.0
    )


def held(key: str = "seat", value: str = "Window", **changes) -> dict:
    """A fact as SQL_EXISTING reads it (plus the columns a person's change loads)."""
    row = {
        "id": 7,
        "key": key,
        "value": value,
        "category": "preference",
        "status": FactStatus.ACTIVE,
        "sensitive": False,
        "expires_at": None,
        "expiry_pinned": False,
        "version": 3,
        "source_session_id": "s-old",
        "created_at": NOW - timedelta(days=9),
        "updated_at": NOW - timedelta(days=9),
        "changed_at": NOW - timedelta(days=9),
        "evidence": "I always sit by the window",
        "evidence_origin": "extraction",
        "rewritten_by": "customer",
        "rewritten_by_label": "",
    }
    row.update(changes)
    return row


def batch(*drafts: tuple) -> Batch:
    cleaned = Batch()
    cleaned.rank = {}
    for index, (key, value, *rest) in enumerate(drafts):
        clean = validate_fact(key, value, rest[0] if rest else None)
        cleaned[clean.key] = clean
        cleaned.rank[clean.key] = index
    return cleaned


def plan(*drafts: tuple, existing=(), actor: Actor = AGENT, expected=None, cfg=None, tag=""):
    return upsert_plan(
        cleaned=batch(*drafts),
        existing={row["key"]: row for row in existing},
        use_paused=False,
        actor=actor,
        session_tag=tag,
        expected_versions=expected,
        config=cfg or config(),
        now=NOW,
    )


def test_a_new_fact_is_one_insert_at_version_one_with_a_created_event():
    done = plan(("seat", "Aisle"), tag="s-1")
    (row,) = done.inserts
    assert (row["version"], row["status"], row["sensitive"]) == (1, FactStatus.ACTIVE, False)
    assert (row["evidence_origin"], row["source_session_id"]) == ("agent", "s-1")
    (event,) = done.events
    assert event[:3] == ("seat", EventAction.CREATED, None)
    assert json.loads(event[3])["value"] == "Aisle"
    assert (done.updates, done.result.created, done.result.states["seat"].version) == (
        [],
        ["seat"],
        1,
    )


def test_the_same_value_restated_plans_nothing():
    done = plan(("seat", "Window"), existing=[held()])
    assert not done
    assert done.result.unchanged == ["seat"]
    assert done.result.states["seat"].agent_visible


def test_new_words_bump_the_version_replace_the_quote_and_clear_a_persons_mark():
    done = plan(("seat", "Aisle"), existing=[held()], tag="s-2")
    (row,) = done.updates
    assert (row["version"], row["updated_at"], row["changed_at"]) == (4, NOW, NOW)
    # the old version's quote never stays with new words; the agent's words carry no person
    assert (row["evidence"], row["evidence_origin"]) == ("", "agent")
    assert (row["rewritten_by"], row["rewritten_by_label"]) == ("", "")
    assert row["source_session_id"] == "s-2"
    key, action, before, after = done.events[0]
    assert (key, action) == ("seat", EventAction.UPDATED)
    assert json.loads(before)["evidence"] == "I always sit by the window"
    assert json.loads(after) == {
        "value": "Aisle",
        "category": "preference",
        "status": "active",
        "sensitive": False,
        "expires_at": None,
        "version": 4,
    }


def test_a_new_category_alone_keeps_who_wrote_the_words():
    (row,) = plan(("seat", "Window", "constraint"), existing=[held()]).updates
    assert (row["category"], row["version"]) == ("constraint", 4)
    assert (row["rewritten_by"], row["rewritten_by_label"]) == ("customer", "")
    # the upsert does not read the column: None, which the statement keeps as it is (coalesce)
    unread = {k: v for k, v in held().items() if not k.startswith("rewritten_by")}
    (row,) = plan(("seat", "Window", "constraint"), existing=[unread]).updates
    assert (row["rewritten_by"], row["rewritten_by_label"]) == (None, None)


def test_a_batch_is_stamped_in_the_order_named_a_repeated_key_at_its_last_place():
    done = plan(("seat", "Aisle"), ("meal", "Vegetarian"), ("seat", "Window seat"))
    stamps = {row["key"]: row["updated_at"] for row in done.inserts}
    assert stamps["meal"] < stamps["seat"]
    assert [row["key"] for row in done.inserts] == ["seat", "meal"]  # first named, first placed


def test_restating_an_expired_pinned_fact_revives_it():
    gone = held(expires_at=NOW - timedelta(days=1), expiry_pinned=True)
    (row,) = plan(("seat", "Window"), existing=[gone]).updates
    assert (row["expiry_pinned"], row["expires_at"], row["version"]) == (False, None, 4)


def test_a_special_category_is_held_from_the_agent_masked_from_staff_and_kept_by_travellers():
    draft = ("mobility", "Needs a wheelchair at the gate")
    (agents,) = plan(draft).inserts
    assert (agents["sensitive"], agents["status"]) == (True, FactStatus.PENDING_REVIEW)
    assert plan(draft).result.sent_to_review == ["mobility"]
    (staffs,) = plan(draft, actor=MEI).inserts
    assert (staffs["sensitive"], staffs["status"]) == (True, FactStatus.ACTIVE)
    (travellers,) = plan(draft, actor=TRAVELLER).inserts
    assert travellers["sensitive"] is False


def test_expected_versions_refuse_a_stale_or_taken_key_and_allow_an_add():
    with pytest.raises(FactConflict) as stale:
        plan(("seat", "Aisle"), existing=[held()], expected={"seat": 2})
    assert stale.value.current_version == 3
    with pytest.raises(FactConflict):
        plan(("seat", "Aisle"), existing=[held()], expected={"seat": ABSENT})
    assert plan(("meal", "Vegan"), expected={"meal": ABSENT}).result.created == ["meal"]
    assert plan(("seat", "Aisle"), existing=[held()], expected={"Seat": 3}).updates


def test_retention_counts_from_the_new_words():
    rule = RetentionRule(name="seats", category="preference", ttl_days=30)
    (row,) = plan(("seat", "Aisle"), existing=[held()], cfg=config(rule)).updates
    assert row["expires_at"] == NOW + timedelta(days=30)


def test_memory_off_or_use_paused_makes_the_result_invisible_to_the_agent():
    done = plan(("seat", "Aisle"), cfg=config(memory_enabled=False))
    assert done.result.states["seat"].agent_visible is False


def test_a_persons_edit_is_the_same_rule_with_their_name_and_no_quote():
    row = held(rewritten_by="", rewritten_by_label="")
    new = restate(row, CleanFact("seat", "Aisle", "preference"), actor=MEI, at=NOW)
    done = change_plan(row, new, action=EventAction.UPDATED)
    (written,) = done.updates
    assert (written["rewritten_by"], written["rewritten_by_label"]) == ("staff", "Mei Lin")
    assert (written["evidence"], written["evidence_origin"]) == ("", "staff")
    assert (written["version"], written["updated_at"], written["changed_at"]) == (4, NOW, NOW)
    assert row["version"] == 3  # the current row is not touched
    (_, action, before, after) = done.events[0]
    assert (action, json.loads(before)["version"], json.loads(after)["version"]) == (
        EventAction.UPDATED,
        3,
        4,
    )


def test_a_change_without_new_words_moves_changed_at_but_not_updated_at():
    row = held()
    new = next_version(row, at=NOW, expires_at=NOW, expiry_pinned=True)
    done = change_plan(row, new, action=EventAction.EXPIRED)
    (written,) = done.updates
    assert (written["version"], written["changed_at"]) == (4, NOW)
    assert written["updated_at"] == row["updated_at"]  # retention still counts from the words
    assert (written["rewritten_by"], written["evidence"]) == ("customer", row["evidence"])
    assert json.loads(done.events[0][3])["expires_at"] == NOW.isoformat()


def test_rules_given_recompute_the_expiry_a_pinned_date_stays():
    rule = RetentionRule(name="sensitive", sensitive=True, ttl_days=7)
    row = held()
    flagged = change_plan(
        row, next_version(row, at=NOW, sensitive=True), action="flagged", rules=[rule]
    )
    assert flagged.updates[0]["expires_at"] == row["updated_at"] + timedelta(days=7)
    pinned = held(expires_at=NOW + timedelta(days=1), expiry_pinned=True)
    kept = change_plan(
        pinned, next_version(pinned, at=NOW, sensitive=True), action="flagged", rules=[rule]
    )
    assert kept.updates[0]["expires_at"] == NOW + timedelta(days=1)


def test_a_restricted_fact_keeps_its_value_whoever_restates_it():
    doubted = held(restricted_at=NOW - timedelta(days=1))
    for actor in (AGENT, Actor.extraction(), MEI):
        done = plan(("seat", "Aisle"), ("meal", "Vegetarian"), existing=[doubted], actor=actor)
        assert done.updates == []  # nothing about the restricted fact is written
        assert [event[0] for event in done.events] == ["meal"]  # the other fact is untouched
        assert done.result.kept_restricted == ["seat"] and done.result.created == ["meal"]
        state = done.result.states["seat"]
        assert (state.value, state.version, state.agent_visible) == ("Window", 3, False)
