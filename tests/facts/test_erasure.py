"""The one erasure path: keys hashed in the history, erasers registered by the apps above,
every table classified, and a fixed number of statements whatever the number of facts."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection, models
from django.test.utils import CaptureQueriesContext

from memoryadmin.facts import erasure, selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import EventAction, FactEvent
from tests.support.dbscan import occurrences
from tests.support.writes import agent_upsert

pytestmark = pytest.mark.django_db
SUBJECT = "erase-me-01"
KEY = "zqx_lounge_access"  # unlikely to appear anywhere by chance


# --- every table that can hold a value is known ----------------------------------------------

# Models whose text columns can hold a fact value, and what erases it. A new model that keeps a
# copy of a value must register an eraser with facts.erasure and be listed here.
HOLDS_VALUES = {
    "facts.MemoryFact": "the row itself (erasure.erase_facts / erase_subject)",
    "facts.FactEvent": "snapshots blanked, key replaced by its stored hash (erasure.erase_facts)",
    "api.IdempotencyRecord": "api.idempotency",
    "extraction.ExtractionJob": "extraction.transcripts",
    # No value or key (only the keyed hash), but a turn id and session tag tie a fact to a
    # conversation: they go with the fact.
    "usage.MemoryUse": "usage.facts (with each fact) and usage.subjects (forget everything)",
    # No value or key, but the traveller id and keyed hash tie a mark to a fact: anonymised
    # (mark and dimensions kept for the precision) with the fact, or with the traveller.
    "quality.QualitySampleItem": "quality.facts (with each fact) and quality.subjects",
}
# Models with text columns that never hold a fact value, and why.
NO_VALUES = {
    "admin.LogEntry": "Django admin log; facts are not edited in the admin",
    "auth.Permission": "permission names",
    "auth.Group": "role names",
    "auth.User": "staff accounts",
    "contenttypes.ContentType": "model names",
    "sessions.Session": "login sessions; no fact value is put in a session",
    "facts.Subject": "traveller id and switches",
    "facts.MemorySettings": "policy settings",
    "facts.RetentionRule": "policy rules",
    "facts.PolicyEvent": "policy history: settings, rules and token names, never a fact",
    "facts.RetentionRun": "progress of a recomputation",
    "api.ServiceToken": "token name, hash and scopes",
    "portal.PortalLink": "traveller id, hash of the link secret, who asked for it",
    "portal.PortalSession": "traveller id and hash of the cookie secret",
    "axes.AccessAttempt": "failed staff logins: username, address, user agent, path",
    "axes.AccessFailureLog": "failed staff logins: username, address, user agent, path",
    "axes.AccessLog": "staff logins: username, address, user agent, path",
    "otp_totp.TOTPDevice": "a staff user's authenticator key",
    "access.StaffAccess": "staff access record: who, when, which traveller id, what, address",
    "privacy.PrivacyRequest": "kind, channel, dates, evidence (SHA-256, receipt number, counts, "
    "keyed hash of a key) and staff notes, which ask for no fact words",
    "privacy.RequestStep": "a request's timeline: the same evidence and notes",
    "privacy.WebhookRecipient": "a system's name, URL, events, encrypted signing secret",
    "privacy.OutboxEvent": "event type, traveller id, keyed hash of the key, receipt, path",
    "privacy.WebhookDelivery": "status of one event for one recipient",
    "privacy.DeliveryAttempt": "status code, duration and an exception class name",
    "quality.QualitySample": "when a quality sample was drawn, by whom, from how many facts",
}
TEXT_FIELDS = (models.CharField, models.TextField, models.JSONField)


def test_every_model_with_text_columns_is_classified_as_erased_or_value_free():
    with_text = {
        model._meta.label
        for model in apps.get_models()
        if any(isinstance(field, TEXT_FIELDS) for field in model._meta.concrete_fields)
    }
    unknown = with_text - set(HOLDS_VALUES) - set(NO_VALUES)
    assert not unknown, (
        f"{sorted(unknown)} store text. If they can hold a copy of a fact value, register an "
        "eraser with facts.erasure.register_eraser() from the app's AppConfig.ready() and list "
        "the model in HOLDS_VALUES; otherwise list it in NO_VALUES with the reason."
    )
    assert not (set(HOLDS_VALUES) | set(NO_VALUES)) - with_text, "stale entries in the lists"


def test_every_app_eraser_named_above_is_registered():
    registered = set(erasure.registered_erasers())
    named = {how for how in HOLDS_VALUES.values() if "." in how and " " not in how}
    assert named <= registered


# --- the key goes from the history, its events still group --------------------------------


def test_an_erased_key_is_replaced_by_a_keyed_hash_and_its_history_still_groups():
    agent_upsert(SUBJECT, (KEY, "Gold lounge member"))
    agent_upsert(SUBJECT, (KEY, "Platinum lounge member"))
    services.fact_delete(subject_id=SUBJECT, key=KEY, actor=Actor.customer(SUBJECT))
    assert occurrences(KEY) == {}
    digest = erasure.key_digest(SUBJECT, KEY)
    history = list(selectors.fact_history(SUBJECT, digest))
    assert [event.action for event in history] == [
        EventAction.CREATED,
        EventAction.UPDATED,
        EventAction.DELETED,
    ]
    assert all(event.key == digest and event.before is None for event in history)
    assert history[-1].actor_kind == "customer"

    # Said again later: the new fact's history includes the erased one's events (values gone).
    agent_upsert(SUBJECT, (KEY, "Lounge member again"))
    actions = [event.action for event in selectors.fact_history(SUBJECT, KEY)]
    assert actions == [
        EventAction.CREATED,
        EventAction.UPDATED,
        EventAction.DELETED,
        EventAction.CREATED,
    ]


def _event_table_updates() -> tuple[int, int]:
    """(row updates, of which HOT) of the history table in this transaction so far: the sum
    over its month partitions (issue 31), where the rows are."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(n_tup_upd), 0), coalesce(sum(n_tup_hot_upd), 0)"
            " FROM pg_stat_xact_user_tables"
            " WHERE relid IN (SELECT relid FROM pg_partition_tree('memory_fact_event'))"
        )
        row = cursor.fetchone()
    return (row[0], row[1])


def test_redacting_the_history_writes_no_index():
    """Blanking and hashing an erased fact's events is a HOT update (new row versions on the same
    page, no index entry written): no index reads a column that erasing changes, and the table
    keeps room on its pages. A sweep redacts thousands of events per chunk."""
    assert connection.vendor == "postgresql"
    agent_upsert(SUBJECT, (KEY, "Gold lounge member"), ("zqx_meal", "Vegetarian"))
    agent_upsert(SUBJECT, (KEY, "Platinum lounge member"))
    services.subject_forget(subject_id="someone-else", actor=Actor.customer("someone-else"))
    before = _event_table_updates()

    services.fact_delete(subject_id=SUBJECT, key=KEY, actor=Actor.customer(SUBJECT))

    updated, hot = (now - then for now, then in zip(_event_table_updates(), before, strict=True))
    assert updated == 2  # the created and the updated event, redacted
    assert hot == updated
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.reloptions FROM pg_partition_tree('memory_fact_event') AS t"
            " JOIN pg_class AS c ON c.oid = t.relid WHERE t.isleaf"
        )
        options = cursor.fetchall()
        assert options and all("fillfactor=70" in (row[0] or []) for row in options)


def test_the_digest_depends_on_the_traveller_and_the_secret(settings):
    first = erasure.key_digest("a", KEY)
    assert first != erasure.key_digest("b", KEY)
    assert erasure.is_key_digest(first) and not erasure.is_key_digest(KEY)
    settings.SECRET_KEY = "another-secret-for-this-test"
    assert erasure.key_digest("a", KEY) != first


def test_clear_hashes_every_key_of_the_traveller_but_keeps_other_travellers():
    agent_upsert(SUBJECT, (KEY, "Gold"), ("zqx_meal_note", "Vegan"))
    agent_upsert("someone-else", (KEY, "Silver"))
    services.subject_clear(subject_id=SUBJECT, actor=Actor.customer(SUBJECT))
    keys = set(FactEvent.objects.filter(subject_id=SUBJECT).values_list("key", flat=True))
    assert keys == {
        "",
        erasure.key_digest(SUBJECT, KEY),
        erasure.key_digest(SUBJECT, "zqx_meal_note"),
    }
    assert occurrences("Silver") == {"memory_fact": 1, "memory_fact_event": 1}
    assert FactEvent.objects.filter(subject_id="someone-else", key=KEY).count() == 1


# --- erasers registered by other apps ----------------------------------------------------------


def test_registered_erasers_are_told_what_was_erased_in_the_same_transaction():
    seen: list[erasure.Erased] = []
    erasure.register_eraser("test.probe", seen.append)
    try:
        agent_upsert(SUBJECT, (KEY, "Gold"), ("zqx_other", "Other"))
        services.fact_delete(subject_id=SUBJECT, key=KEY, actor=Actor.customer(SUBJECT))
        services.subject_clear(subject_id=SUBJECT, actor=Actor.customer(SUBJECT))
    finally:
        erasure._ERASERS.pop("test.probe")
    assert seen[0].facts == ((SUBJECT, KEY),) and seen[0].cleared_subjects == ()
    assert seen[1].facts == () and seen[1].cleared_subjects == (SUBJECT,)
    assert seen[1].subject_ids == {SUBJECT}


def test_an_eraser_is_either_sql_or_python_never_both_nor_neither():
    for both_or_neither in ({"eraser": print, "sql": "DELETE FROM x"}, {}):
        with pytest.raises(ValueError, match="either its SQL or a Python eraser"):
            erasure.register_eraser("test.twin", **both_or_neither)
    assert "test.twin" not in erasure.registered_erasers()


# --- a fixed number of statements --------------------------------------------------------------


def _statements(call, n_facts: int, subject_id: str) -> int:
    agent_upsert(subject_id, *[(f"topic_{i}", f"Value number {i}") for i in range(n_facts)])
    agent_upsert(subject_id, *[(f"topic_{i}", f"Changed value {i}") for i in range(n_facts)])
    with CaptureQueriesContext(connection) as queries:
        call(subject_id)
    return len(queries)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: services.subject_clear(subject_id=s, actor=Actor.customer(s)),
        lambda s: services.fact_delete(subject_id=s, key="topic_0", actor=Actor.customer(s)),
    ],
    ids=["subject_clear", "fact_delete"],
)
def test_erasing_takes_the_same_number_of_statements_for_1_or_60_facts(call):
    small = _statements(call, 1, "few-facts")
    large = _statements(call, 60, "many-facts")
    assert small == large
    assert small <= 6  # fact_delete: the lock and one erasing statement (savepoints aside)
