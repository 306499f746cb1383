"""Every service: what it changes, the events it writes (actor, reason), and what it refuses."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memoryadmin.facts import selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import (
    FactBlocked,
    FactConflict,
    FactInvalid,
    FactLearningPaused,
    FactNotFound,
    FactStateError,
)
from memoryadmin.facts.models import (
    ActorKind,
    EventAction,
    FactEvent,
    FactStatus,
    MemoryFact,
    RetentionRule,
    Subject,
)
from memoryadmin.facts.services import FactDraft
from tests.factories import UserFactory
from tests.support.dbscan import occurrences

pytestmark = [pytest.mark.django_db]
SUBJECT = "trav-001"


@pytest.fixture
def staff():
    return Actor.staff(UserFactory(username="agent.smith"))


def upsert(*drafts: tuple, actor: Actor | None = None, **kwargs):
    return services.fact_upsert(
        subject_id=kwargs.pop("subject_id", SUBJECT),
        facts=[FactDraft(*d) for d in drafts],
        actor=actor or Actor.agent("host-1"),
        **kwargs,
    )


def events(key: str | None = None) -> list[FactEvent]:
    qs = FactEvent.objects.filter(subject_id=SUBJECT).order_by("id")
    return list(qs.filter(key=key) if key is not None else qs)


def get(key: str) -> MemoryFact:
    return MemoryFact.objects.get(subject_id=SUBJECT, key=key)


# --- fact_upsert ------------------------------------------------------------------------------


def test_upsert_creates_with_a_created_event_naming_actor_reason_and_session():
    result = upsert(
        ("seat_preference", "Prefers aisle seats"),
        reason="said in chat",
        session_tag="0123456789ab",
    )
    assert result.created == ["seat_preference"]
    fact = get("seat_preference")
    assert (fact.version, fact.origin, fact.status, fact.source_session_id) == (
        1,
        "agent",
        FactStatus.ACTIVE,
        "0123456789ab",
    )
    [event] = events()
    assert (event.action, event.actor_kind, event.actor_label, event.reason, event.session_tag) == (
        EventAction.CREATED,
        ActorKind.AGENT,
        "token:host-1",
        "said in chat",
        "0123456789ab",
    )
    assert event.before is None and event.after["value"] == "Prefers aisle seats"


@pytest.mark.parametrize("key", ["jane.doe@example.com", "4111 1111 1111 1111"])
def test_identifiers_in_the_key_are_blocked_before_normalization(key):
    with pytest.raises(FactBlocked) as caught:
        upsert((key, "Some value"))
    assert key not in str(caught.value.fields)
    assert not MemoryFact.objects.exists()


def test_paused_learning_refuses_agent_and_extraction_writes_but_not_people(staff):
    services.subject_set_preferences(
        subject_id=SUBJECT, memory_paused=True, actor=Actor.customer(SUBJECT)
    )
    for actor in (Actor.agent("host"), Actor.extraction()):
        with pytest.raises(FactLearningPaused):
            upsert(("seat", "Aisle"), actor=actor)
    assert not MemoryFact.objects.exists()
    upsert(("seat", "Aisle"), actor=staff)
    upsert(("meal", "Vegetarian"), actor=Actor.customer(SUBJECT))
    assert MemoryFact.objects.count() == 2


def test_same_cleaned_value_is_a_no_op_without_event():
    upsert(("seat_preference", "Prefers aisle seats"))
    result = upsert(("Seat Preference", "  Prefers   aisle\u200b seats "))
    assert result.unchanged == ["seat_preference"] and result.changed == []
    assert get("seat_preference").version == 1
    assert len(events()) == 1


def test_a_change_of_case_is_a_correction_and_is_stored():
    """Issue 20: upstream stores `Prefers AISLE` over `prefers aisle`; ours ignored it."""
    upsert(("seat_preference", "prefers aisle"))
    result = upsert(("seat_preference", "Prefers AISLE"))
    assert result.updated == ["seat_preference"]
    assert (get("seat_preference").value, get("seat_preference").version) == ("Prefers AISLE", 2)
    assert [e.action for e in events("seat_preference")] == [
        EventAction.CREATED,
        EventAction.UPDATED,
    ]


def test_new_value_is_an_update_with_before_and_after_and_a_version_bump():
    upsert(("seat_preference", "Prefers window seats"))
    result = upsert(("seat_preference", "Prefers aisle seats"))
    assert result.updated == ["seat_preference"]
    assert get("seat_preference").version == 2
    update = events("seat_preference")[-1]
    assert update.action == EventAction.UPDATED
    assert update.before["value"] == "Prefers window seats"
    assert update.after["value"] == "Prefers aisle seats"


def test_category_change_alone_is_an_update():
    upsert(("overnight_flight", "Avoids overnight flights"))
    upsert(("overnight_flight", "Avoids overnight flights", "constraint"))
    assert get("overnight_flight").category == "constraint"
    assert [e.action for e in events()] == [EventAction.CREATED, EventAction.UPDATED]


def test_agent_fact_on_a_special_category_is_held_for_review():
    result = upsert(("mobility", "Needs a wheelchair at the gate"))
    fact = get("mobility")
    assert (fact.sensitive, fact.status) == (True, FactStatus.PENDING_REVIEW)
    assert result.sent_to_review == ["mobility"]
    assert selectors.facts_for_agent(SUBJECT) == []


def test_staff_written_sensitive_fact_is_not_held(staff):
    upsert(("mobility", "Needs a wheelchair at the gate"), actor=staff)
    assert get("mobility").status == FactStatus.ACTIVE


def test_a_blocked_fact_fails_the_whole_batch_and_writes_nothing():
    with pytest.raises(FactBlocked) as caught:
        upsert(("seat", "Aisle"), ("card", "4111 1111 1111 1111"))
    assert "4111" not in str(caught.value.fields) and "facts[1].value" in caught.value.fields
    assert MemoryFact.objects.count() == 0 and FactEvent.objects.count() == 0


@pytest.mark.parametrize(
    ("draft", "field"),
    [
        (("", "Aisle"), "facts[1].key"),
        (("seat", ""), "facts[1].value"),
        (("seat", "Aisle", "wish"), "facts[1].category"),
        (("\x00\x00", "Aisle"), "facts[1].key"),
        (("🛫", "Aisle"), "facts[1].key"),
    ],
)
def test_invalid_fact_is_a_field_error_and_nothing_is_written(draft, field):
    with pytest.raises(FactInvalid) as caught:
        upsert(("fine", "A fine fact"), draft)
    assert field in caught.value.fields
    assert MemoryFact.objects.count() == 0 and FactEvent.objects.count() == 0


def test_oversize_and_odd_input_is_normalized():
    upsert(("k" * 65, "v" * 10_000), ("meal\x00", "Vegetarian 🥗 meals\x00"))
    assert {f.key: len(f.value) for f in MemoryFact.objects.all()} == {"k" * 64: 200, "meal": 18}
    assert get("meal").value == "Vegetarian 🥗 meals"


@pytest.mark.parametrize("subject_id", ["", "x" * 129, "has space", "ctl\x00", "a/b"])
def test_bad_subject_id_is_rejected(subject_id):
    with pytest.raises(FactInvalid) as caught:
        upsert(("seat", "Aisle"), subject_id=subject_id)
    assert "subject_id" in caught.value.fields
    assert Subject.objects.count() == 0


def test_expected_versions_make_the_write_conditional():
    upsert(("seat", "Window"))
    with pytest.raises(FactConflict):
        upsert(("seat", "Aisle"), expected_versions={"seat": 7})
    with pytest.raises(FactConflict):
        upsert(("meal", "Vegetarian"), expected_versions={"meal": 1})
    assert get("seat").value == "Window" and not MemoryFact.objects.filter(key="meal").exists()
    upsert(("seat", "Aisle"), expected_versions={"seat": 1})
    assert get("seat").version == 2


def test_restating_an_expired_fact_revives_it(staff):
    upsert(("seat", "Aisle"))
    services.fact_expire(subject_id=SUBJECT, key="seat", actor=staff)
    assert selectors.facts_for_agent(SUBJECT) == []
    upsert(("seat", "Aisle"))
    assert [f.key for f in selectors.facts_for_agent(SUBJECT)] == ["seat"]


# --- retention on write -------------------------------------------------------------------------


def test_expiry_comes_from_the_most_specific_rule():
    RetentionRule.objects.create(name="all", ttl_days=365)
    RetentionRule.objects.create(name="context", category="context", ttl_days=90)
    RetentionRule.objects.create(name="party", category="context", key_glob="travel_*", ttl_days=30)
    RetentionRule.objects.create(name="sensitive", sensitive=True, ttl_days=10)
    upsert(
        ("seat", "Aisle"), ("travel_party", "With spouse", "context"), ("hotel", "Near", "context")
    )
    for key, days in (("seat", 365), ("travel_party", 30), ("hotel", 90)):
        fact = get(key)
        assert fact.expires_at - fact.updated_at == timedelta(days=days)
    upsert(("mobility", "Uses a wheelchair"))
    assert get("mobility").expires_at - get("mobility").updated_at == timedelta(days=10)


# --- fact_edit --------------------------------------------------------------------------------


def test_edit_with_current_version_updates_and_audits(staff):
    upsert(("seat", "Window"))
    fact = services.fact_edit(
        subject_id=SUBJECT,
        key="seat",
        value="Aisle",
        category="constraint",
        expected_version=1,
        actor=staff,
        reason="traveller called",
    )
    assert (fact.value, fact.category, fact.version) == ("Aisle", "constraint", 2)
    event = events("seat")[-1]
    assert (event.action, event.actor_kind, event.actor_user.username, event.reason) == (
        EventAction.UPDATED,
        ActorKind.STAFF,
        "agent.smith",
        "traveller called",
    )


def test_a_staff_edit_records_the_staff_members_name_as_who_wrote_the_value():
    upsert(("seat", "Window"))
    assert (get("seat").rewritten_by, get("seat").rewritten_by_label) == ("", "")
    named = Actor.staff(UserFactory(username="mlin", first_name="Mei", last_name="Lin"))
    services.fact_edit(
        subject_id=SUBJECT, key="seat", value="Aisle", expected_version=1, actor=named
    )
    assert (get("seat").rewritten_by, get("seat").rewritten_by_label) == ("staff", "Mei Lin")
    # an account without a full name: its user name, as the history records it
    services.fact_edit(
        subject_id=SUBJECT, key="seat", value="Aisle please", expected_version=2,
        actor=Actor.staff(UserFactory(username="ops.two", first_name="", last_name="")),
    )  # fmt: skip
    assert (get("seat").rewritten_by, get("seat").rewritten_by_label) == ("staff", "ops.two")


def test_a_traveller_correction_says_so_and_the_agents_next_value_clears_it():
    upsert(("seat", "Window"))
    services.fact_edit(
        subject_id=SUBJECT, key="seat", value="Aisle", expected_version=1,
        actor=Actor.customer(SUBJECT),
    )  # fmt: skip
    assert (get("seat").rewritten_by, get("seat").rewritten_by_label) == ("customer", "")
    upsert(("seat", "Aisle"))  # the same words from the agent: nothing rewritten
    assert get("seat").rewritten_by == "customer"
    upsert(("seat", "Window again"), actor=Actor.extraction())
    assert (get("seat").rewritten_by, get("seat").rewritten_by_label) == ("", "")


def test_a_category_change_alone_keeps_who_wrote_the_words(staff):
    upsert(("seat", "Window"))
    services.fact_edit(
        subject_id=SUBJECT, key="seat", value="Aisle", expected_version=1,
        actor=Actor.customer(SUBJECT),
    )  # fmt: skip
    services.fact_edit(
        subject_id=SUBJECT, key="seat", category="constraint", expected_version=2, actor=staff
    )
    assert get("seat").rewritten_by == "customer"


def test_the_agents_new_category_alone_keeps_who_wrote_the_words():
    upsert(("seat", "Window"))
    services.fact_edit(
        subject_id=SUBJECT, key="seat", value="Aisle", expected_version=1,
        actor=Actor.customer(SUBJECT),
    )  # fmt: skip
    upsert(("seat", "Aisle", "constraint"))
    assert (get("seat").category, get("seat").version) == ("constraint", 3)
    assert get("seat").rewritten_by == "customer"


def test_edit_with_stale_version_raises_and_changes_nothing(staff):
    upsert(("seat", "Window"))
    upsert(("seat", "Aisle"))
    with pytest.raises(FactConflict) as caught:
        services.fact_edit(
            subject_id=SUBJECT, key="seat", value="Middle", expected_version=1, actor=staff
        )
    assert caught.value.current_version == 2
    assert (get("seat").value, get("seat").version) == ("Aisle", 2)
    assert len(events("seat")) == 2


def test_edit_runs_validation_and_filter(staff):
    upsert(("seat", "Window"))
    with pytest.raises(FactBlocked):
        services.fact_edit(
            subject_id=SUBJECT,
            key="seat",
            value="mail a@b.example",
            expected_version=1,
            actor=staff,
        )
    with pytest.raises(FactInvalid):
        services.fact_edit(
            subject_id=SUBJECT, key="seat", value="  ", expected_version=1, actor=staff
        )
    with pytest.raises(FactNotFound):
        services.fact_edit(
            subject_id=SUBJECT, key="nope", value="x", expected_version=1, actor=staff
        )
    assert get("seat").value == "Window" and len(events()) == 1


# --- expiry, sensitivity, review -----------------------------------------------------------------


def test_expire_hides_the_fact_now_and_audits(staff):
    upsert(("seat", "Aisle"))
    services.fact_expire(subject_id=SUBJECT, key="seat", actor=staff, reason="outdated")
    assert selectors.facts_for_agent(SUBJECT) == []
    assert get("seat").expires_at <= timezone.now()
    assert (events()[-1].action, events()[-1].reason) == (EventAction.EXPIRED, "outdated")


def test_set_expiry_pins_a_date_and_none_returns_to_rules(staff):
    RetentionRule.objects.create(name="all", ttl_days=30)
    upsert(("seat", "Aisle"))
    when = timezone.now() + timedelta(days=3)
    services.fact_set_expiry(subject_id=SUBJECT, key="seat", expires_at=when, actor=staff)
    assert get("seat").expires_at == when
    upsert(("seat", "Window"))  # a new value does not override a pinned date
    assert get("seat").expires_at == when
    services.fact_set_expiry(subject_id=SUBJECT, key="seat", expires_at=None, actor=staff)
    assert get("seat").expires_at == get("seat").updated_at + timedelta(days=30)
    assert [e.action for e in events()].count(EventAction.EXPIRY_CHANGED) == 2


def test_flag_and_unflag_sensitive(staff):
    upsert(("meal", "Vegetarian"))
    services.fact_flag_sensitive(subject_id=SUBJECT, key="meal", actor=staff, reason="religious")
    assert get("meal").sensitive and selectors.tier_one(SUBJECT) == []
    services.fact_flag_sensitive(subject_id=SUBJECT, key="meal", actor=staff)  # no-op
    services.fact_unflag_sensitive(subject_id=SUBJECT, key="meal", actor=staff)
    assert not get("meal").sensitive
    assert [e.action for e in events()] == [
        EventAction.CREATED,
        EventAction.FLAGGED_SENSITIVE,
        EventAction.UNFLAGGED_SENSITIVE,
    ]


def test_approve_releases_a_held_fact(staff):
    upsert(("mobility", "Needs a wheelchair"))
    services.fact_approve(subject_id=SUBJECT, key="mobility", actor=staff, reason="confirmed")
    assert get("mobility").status == FactStatus.ACTIVE
    assert [f.key for f in selectors.facts_search(SUBJECT, "wheelchair")] == ["mobility"]
    assert events()[-1].action == EventAction.APPROVED
    with pytest.raises(FactStateError):
        services.fact_approve(subject_id=SUBJECT, key="mobility", actor=staff)


def test_reject_erases_a_held_fact(staff):
    upsert(("mobility", "Needs a wheelchair"))
    services.fact_reject(subject_id=SUBJECT, key="mobility", actor=staff, reason="not said")
    assert not MemoryFact.objects.exists()
    assert [(e.action, e.before) for e in events()] == [
        (EventAction.CREATED, None),
        (EventAction.REJECTED, None),
    ]
    created, rejected = events()
    assert created.after is None  # the value is erased
    # what support may still say: the category, when it was learned, how often it changed
    assert set(rejected.after) == {"erased_fact"}
    assert set(rejected.after["erased_fact"]) == {"category", "learned_at", "changes"}
    assert all(e.redacted_at for e in events()[:1])


def test_approve_with_stale_version_raises(staff):
    upsert(("mobility", "Needs a wheelchair"))
    with pytest.raises(FactConflict):
        services.fact_approve(subject_id=SUBJECT, key="mobility", actor=staff, expected_version=5)
    assert get("mobility").status == FactStatus.PENDING_REVIEW


# --- delete, clear, preferences ------------------------------------------------------------------


def test_delete_returns_whether_it_deleted_and_keeps_who_what_when_why(staff):
    upsert(("seat", "Aisle"))
    assert services.fact_delete(subject_id=SUBJECT, key="seat", actor=staff, reason="asked") is True
    assert services.fact_delete(subject_id=SUBJECT, key="seat", actor=staff) is False
    created, deleted = events()
    assert (deleted.action, deleted.actor_user.username, deleted.reason) == (
        EventAction.DELETED,
        "agent.smith",
        "asked",
    )
    assert created.before is None and created.after is None and created.redacted_at


def test_clear_deletes_all_bumps_generation_and_records_one_event():
    upsert(("seat", "Aisle"), ("meal", "Vegetarian"))
    generation = services.subject_clear(
        subject_id=SUBJECT, actor=Actor.customer(SUBJECT), reason="forget me"
    )
    assert generation == 1 and selectors.purge_generation(SUBJECT) == 1
    assert not MemoryFact.objects.exists()
    last = events()[-1]
    assert (last.action, last.actor_kind, last.after) == (
        EventAction.SUBJECT_CLEARED,
        ActorKind.CUSTOMER,
        {"facts_deleted": 2, "purge_generation": 1},
    )


def test_preferences_pause_learning_and_use_with_an_event():
    actor = Actor.customer(SUBJECT)
    services.subject_set_preferences(subject_id=SUBJECT, memory_paused=True, actor=actor)
    services.subject_set_preferences(subject_id=SUBJECT, memory_paused=True, actor=actor)  # no-op
    subject = Subject.objects.get(subject_id=SUBJECT)
    assert subject.memory_paused and not subject.memory_use_paused
    [event] = events()
    assert event.action == EventAction.PREFERENCES_CHANGED
    assert event.after == {"memory_paused": True, "memory_use_paused": False}


# --- erasure -----------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["delete", "reject", "clear"])
def test_erased_values_appear_in_no_table(staff, how):
    secret = "Prefers seat 12C near the galley"
    upsert(("seat", "Prefers seat 14A"), ("diet", "Vegetarian meals"))
    upsert(("seat", secret), ("mobility", "Needs wheelchair Zq7"))
    staff_value = "Kosher meal Xy9 (edited)"
    services.fact_edit(
        subject_id=SUBJECT, key="diet", value=staff_value, expected_version=1, actor=staff
    )
    other = "Other traveller keeps this"
    upsert(("seat", other), subject_id="someone-else")
    assert occurrences(secret) and occurrences("Needs wheelchair Zq7")

    if how == "delete":
        services.fact_delete(subject_id=SUBJECT, key="seat", actor=staff)
        gone = [secret, "Prefers seat 14A"]
    elif how == "reject":
        services.fact_reject(subject_id=SUBJECT, key="mobility", actor=staff)
        gone = ["Needs wheelchair Zq7"]
    else:
        services.subject_clear(subject_id=SUBJECT, actor=staff)
        gone = [secret, "Prefers seat 14A", "Needs wheelchair Zq7", staff_value, "Vegetarian meals"]
    for value in gone:
        assert occurrences(value) == {}, value
    assert occurrences(other) == {"memory_fact": 1, "memory_fact_event": 1}


# --- fact_upsert outside any transaction: its own, BEGIN and COMMIT sent with its statements -----


def _other_connection_sees(subject_id: str) -> tuple[list[str], int]:
    """What another session reads: committed facts and events only."""
    import psycopg
    from django.db import connection

    settings_dict = connection.get_connection_params()
    settings_dict.pop("cursor_factory", None)
    settings_dict.pop("context", None)
    with psycopg.connect(**settings_dict, autocommit=True) as other:
        keys = [
            row[0]
            for row in other.execute(
                "SELECT key FROM memory_fact WHERE subject_id = %s ORDER BY key", [subject_id]
            )
        ]
        [(events,)] = other.execute(
            "SELECT count(*) FROM memory_fact_event WHERE subject_id = %s", [subject_id]
        ).fetchall()
    return keys, events


@pytest.mark.django_db(transaction=True)
def test_an_upsert_outside_a_transaction_commits_in_one_transaction_of_its_own():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    selectors.memory_config()  # the per-process cache is warm on a busy worker
    with CaptureQueriesContext(connection) as queries:
        result = services.fact_upsert(
            subject_id="own-tx",
            facts=[FactDraft("seat_preference", "Aisle"), FactDraft("meal_note", "Vegetarian")],
            actor=Actor.agent("host-1"),
        )

    assert sorted(result.created) == ["meal_note", "seat_preference"]
    assert _other_connection_sees("own-tx") == (["meal_note", "seat_preference"], 2)
    sqls = [query["sql"] for query in queries.captured_queries]
    assert (sqls[0], sqls[-1]) == ("BEGIN", "COMMIT")
    assert sqls.count("BEGIN") == 1 and sqls.count("COMMIT") == 1
    assert not any("SAVEPOINT" in sql for sql in sqls)
    assert connection.connection.info.transaction_status.name == "IDLE"


@pytest.mark.django_db(transaction=True)
def test_an_upsert_refused_after_its_lock_leaves_nothing_behind_and_the_connection_usable():
    from django.db import connection

    services.fact_upsert(
        subject_id="own-tx-2",
        facts=[FactDraft("seat_preference", "Aisle")],
        actor=Actor.agent("host-1"),
    )
    services.subject_set_preferences(
        subject_id="own-tx-2", actor=Actor.customer("own-tx-2"), memory_paused=True
    )
    with pytest.raises(FactLearningPaused):  # found once the traveller's row is locked
        services.fact_upsert(
            subject_id="own-tx-2",
            facts=[FactDraft("meal_note", "Vegan")],
            actor=Actor.agent("host-1"),
        )
    with pytest.raises(FactConflict):  # a stale version: nothing at all is written
        services.fact_upsert(
            subject_id="own-tx-2",
            facts=[FactDraft("seat_preference", "Window"), FactDraft("meal_note", "Vegan")],
            actor=Actor.customer("own-tx-2"),
            expected_versions={"seat_preference": 99},
        )

    assert connection.connection.info.transaction_status.name == "IDLE"
    keys, events = _other_connection_sees("own-tx-2")
    assert keys == ["seat_preference"]
    assert selectors.subject_facts("own-tx-2")[0].value == "Aisle"
    # The connection goes on working, in its own transactions.
    services.fact_upsert(
        subject_id="own-tx-2",
        facts=[FactDraft("meal_note", "Vegan")],
        actor=Actor.customer("own-tx-2"),
    )
    assert _other_connection_sees("own-tx-2")[0] == ["meal_note", "seat_preference"]


@pytest.mark.django_db(transaction=True)
def test_before_commit_runs_in_the_upserts_own_transaction_and_its_error_undoes_the_write():
    """A caller's statement sent with the writes and the COMMIT (extraction ends its job so):
    when it fails, the COMMIT is cancelled and nothing of the write is left."""
    from django.db import DatabaseError, connection

    from memoryadmin.db.cursors import hot_cursor

    seen: list[list[str]] = []

    def note(result: services.UpsertResult) -> None:
        seen.append(sorted(result.created))
        with hot_cursor() as cursor:  # queued with the writes, not fetched
            cursor.execute(
                "UPDATE memory_subject SET memory_use_paused = false WHERE subject_id = %s",
                ["hooked"],
            )

    services.fact_upsert(
        subject_id="hooked",
        facts=[FactDraft("seat_preference", "Aisle")],
        actor=Actor.agent("host-1"),
        before_commit=note,
    )
    assert seen == [["seat_preference"]]
    assert _other_connection_sees("hooked") == (["seat_preference"], 1)

    def refuse(result: services.UpsertResult) -> None:
        with hot_cursor() as cursor:
            cursor.execute("SELECT 1 / 0")

    with pytest.raises(DatabaseError):
        services.fact_upsert(
            subject_id="hooked",
            facts=[FactDraft("meal_note", "Vegan")],
            actor=Actor.agent("host-1"),
            before_commit=refuse,
        )
    assert _other_connection_sees("hooked") == (["seat_preference"], 1)
    assert connection.connection.info.transaction_status.name == "IDLE"


def test_before_commit_runs_even_when_there_is_nothing_to_write():
    calls: list[services.UpsertResult] = []
    services.fact_upsert(
        subject_id="hooked-empty", facts=[], actor=Actor.agent("host-1"), before_commit=calls.append
    )
    assert len(calls) == 1 and not calls[0].created and not calls[0].updated
