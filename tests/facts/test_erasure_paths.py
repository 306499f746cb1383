"""The fast erasure path: every event carries the keyed hash of its key from the start, erasure
is one statement (DELETE, redaction, erasure event and the erasers' SQL), and DjangoMemoryStore
erases on its native async connection with the same result as the service."""

from __future__ import annotations

import asyncio
import concurrent.futures

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from memoryadmin.api.models import IdempotencyRecord, ServiceToken
from memoryadmin.facts import erasure, keyhash, selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import EventAction, FactEvent, MemoryFact, Subject
from memoryadmin.facts.services import ImportDraft
from memoryadmin.facts.store import DjangoMemoryStore
from memoryadmin.usage.models import MemoryUse
from memoryadmin.usage.services import TurnUse, uses_record
from tests.support.dbscan import occurrences
from tests.support.writes import agent_upsert

from .store_contract import fact, run

STAFF = Actor.system("test-staff")


def stored_reply(subject_id: str, value: str) -> IdempotencyRecord:
    token, _ = ServiceToken.objects.get_or_create(
        name="t", defaults={"token_hash": "x" * 64, "prefix": "mat_xxxx"}
    )
    return IdempotencyRecord.objects.create(
        token=token,
        key=f"k-{subject_id}",
        subject_id=subject_id,
        method="PUT",
        path="/p",
        request_hash="h",
        status_code=201,
        response_body={"value": value},
    )


def assert_hashes_consistent() -> None:
    """Every event stores the hash of its key: "" for none, the key itself once erased."""
    for event in FactEvent.objects.all():
        assert event.key_hash == keyhash.event_key_hash(event.subject_id, event.key), event


# --- the stored hash -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_every_way_of_writing_an_event_stores_the_hash_of_its_key():
    agent_upsert("h-1", ("seat_note", "Aisle Qz1"), ("meal_note", "Vegan Qz2"))  # multi-row INSERT
    fact = selectors.subject_fact("h-1", "seat_note")
    services.fact_edit(  # one event through the ORM
        subject_id="h-1",
        key="seat_note",
        expected_version=fact.version,
        actor=STAFF,
        value="Window Qz3",
    )
    services.facts_import(  # COPY
        facts=[ImportDraft("h-2", "bag_note", "Carry-on Qz4")], actor=STAFF
    )
    services.fact_delete(subject_id="h-1", key="meal_note", actor=STAFF)  # the erasure event
    services.subject_set_legal_hold(subject_id="h-2", hold=True, actor=STAFF, reason="case 1")
    services.subject_clear(subject_id="h-2", actor=STAFF)  # and one summary per fact it erased
    assert FactEvent.objects.count() == 8
    assert_hashes_consistent()
    digest = keyhash.key_digest("h-1", "seat_note")
    assert set(FactEvent.objects.filter(key="seat_note").values_list("key_hash", flat=True)) == {
        digest
    }


@pytest.mark.django_db
def test_an_event_about_a_fact_without_its_hash_is_refused():
    """It could not be found when the fact is erased, so the database does not take it."""
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO memory_fact_event (subject_id, key, key_hash, action, actor_kind,"
            " actor_label, reason, session_tag, created_at)"
            " VALUES ('x', 'seat', '', 'created', 'agent', '', '', '', now())"
        )


@pytest.mark.django_db
def test_bulk_created_events_get_their_hash_too():
    FactEvent.objects.bulk_create(
        [
            FactEvent(subject_id="b-1", key="seat", action=EventAction.CREATED, actor_kind="agent"),
        ]
    )
    assert FactEvent.objects.get().key_hash == keyhash.key_digest("b-1", "seat")


def test_the_digest_is_djangos_salted_hmac(settings):
    from django.utils.crypto import salted_hmac

    settings.SECRET_KEY = "a-secret-for-this-test-only-0123456789"
    expected = salted_hmac(
        "memoryadmin.facts.erasure.key-digest", "s-1\x00seat", algorithm="sha256"
    ).hexdigest()[:40]
    assert keyhash.key_digest("s-1", "seat") == "#" + expected


@pytest.mark.django_db
def test_history_written_before_a_key_rotation_is_still_found_and_erased(settings):
    """SECRET_KEY rotated with the old one in SECRET_KEY_FALLBACKS: the events written before
    are found under their old hash, and erasing the fact still blanks them."""
    settings.SECRET_KEY = "the-old-secret-key-for-this-test-0123456789"
    agent_upsert("r-1", ("seat_note", "Old secret aisle Rk7"))
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "the-new-secret-key-for-this-test-0123456789"
    agent_upsert("r-1", ("seat_note", "New secret window Rk8"))
    assert [e.action for e in selectors.fact_history("r-1", "seat_note")] == [
        EventAction.CREATED,
        EventAction.UPDATED,
    ]
    assert services.fact_delete(subject_id="r-1", key="seat_note", actor=STAFF)
    assert occurrences("Rk7") == {} and occurrences("Rk8") == {}
    assert occurrences("seat_note") == {}


@pytest.mark.django_db(transaction=True)
def test_the_stores_delete_erases_history_and_receipts_under_every_hash(settings, host_loop):
    """The store's function looks the history and the receipts up one hash at a time: those
    written under a secret since rotated into SECRET_KEY_FALLBACKS are erased as well."""
    settings.SECRET_KEY = "the-old-secret-key-for-this-test-0123456789"
    agent_upsert("r-2", ("seat_note", "Old secret aisle Rk5"))
    uses_record(subject_id="r-2", uses=[TurnUse("s-1", "t-1", injected=["seat_note"])])
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "the-new-secret-key-for-this-test-0123456789"
    agent_upsert("r-2", ("seat_note", "New secret window Rk6"))
    uses_record(subject_id="r-2", uses=[TurnUse("s-1", "t-2", injected=["seat_note"])])
    assert len(set(MemoryUse.objects.filter(subject_id="r-2").values_list("key_hash"))) == 2
    native = DjangoMemoryStore(native=True, actor=Actor.agent("host-1"))
    assert on_loop(host_loop, native.delete_fact("r-2", "seat_note")) is True
    assert occurrences("Rk5") == {} and occurrences("Rk6") == {}
    assert occurrences("seat_note") == {}
    assert not MemoryUse.objects.filter(subject_id="r-2", erased_at__isnull=True).exists()


# --- one statement ------------------------------------------------------------------------------


def _statements(call) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        call()
    return [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]


def _count(call) -> int:
    return len(_statements(call))


def _shapes(statements: list[str]) -> list[str]:
    """Each statement named by what it is: the plan mode set around the write, or the rest."""
    return [
        "plans on"
        if "force_generic_plan" in sql
        else "plans back"
        if "plan_cache_mode_was" in sql
        else "erase"
        if "erased_facts" in sql
        else "lock"
        if "FOR UPDATE" in sql
        else sql
        for sql in statements
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("prepared", [True, False], ids=["on", "DATABASE_PREPARED_WRITES-off"])
def test_fact_delete_is_the_traveller_lock_and_one_erasing_statement(prepared, settings):
    """With `DATABASE_PREPARED_WRITES` the erasing statement travels between the two statements
    that ask for its generic plan and put the mode back (one round trip); off, alone."""
    settings.DATABASE_PREPARED_WRITES = prepared
    expected = ["lock", "plans on", "erase", "plans back"] if prepared else ["lock", "erase"]
    agent_upsert("c-1", *[(f"topic_{i}", f"Value {i}") for i in range(40)])
    stored_reply("c-1", "Value 3")
    delete = lambda: services.fact_delete(subject_id="c-1", key="topic_3", actor=STAFF)  # noqa: E731
    assert _shapes(_statements(delete)) == expected
    assert IdempotencyRecord.objects.get().response_body is None  # its eraser ran, inside it
    # nothing there: the same statements, nothing written
    assert _shapes(_statements(delete)) == expected
    assert FactEvent.objects.filter(action=EventAction.DELETED).count() == 1


@pytest.mark.django_db
def test_subject_clear_takes_the_same_few_statements_for_any_number_of_facts():
    agent_upsert("c-2", ("one", "Value 1"))
    agent_upsert("c-3", *[(f"topic_{i}", f"Value {i}") for i in range(60)])
    counts = [
        _count(lambda s=s: services.subject_clear(subject_id=s, actor=STAFF))
        for s in ("c-2", "c-3")
    ]
    assert counts[0] == counts[1] <= 4  # lock, erase (with the erasers), bump, the event


@pytest.mark.django_db
def test_a_python_eraser_still_runs_inside_the_transaction():
    seen: list[erasure.Erased] = []
    erasure.register_eraser("test.probe", seen.append)
    try:
        assert not erasure.native_ready()
        agent_upsert("p-1", ("seat_note", "Aisle"))
        assert services.fact_delete(subject_id="p-1", key="seat_note", actor=STAFF)
        assert not services.fact_delete(subject_id="p-1", key="seat_note", actor=STAFF)
    finally:
        erasure._ERASERS.pop("test.probe")
    assert [e.facts for e in seen] == [(("p-1", "seat_note"),)]  # not called for nothing
    assert erasure.native_ready()


# --- the native path ----------------------------------------------------------------------------


def on_loop(loop: asyncio.AbstractEventLoop, coroutine):
    return asyncio.run_coroutine_threadsafe(coroutine, loop).result(10)


def _without_times(after: dict | None) -> dict | None:
    """An erasure event's summary, its learned-at left out (the two travellers' facts were
    learned a moment apart)."""
    if not after or "erased_fact" not in after:
        return after
    kept = dict(after["erased_fact"])
    assert kept.pop("learned_at")
    return {"erased_fact": kept}


def _erased_history(subject_id: str) -> list[tuple]:
    return [
        (
            e.key == keyhash.key_digest(subject_id, "seat_note") == e.key_hash,
            e.action,
            e.actor_kind,
            e.actor_label,
            e.reason,
            e.before,
            _without_times(e.after),
            e.redacted_at is not None,
        )
        for e in FactEvent.objects.filter(subject_id=subject_id).order_by("id")
    ]


@pytest.mark.django_db(transaction=True)
def test_native_delete_erases_exactly_as_the_service_does(host_loop):
    native = DjangoMemoryStore(native=True, actor=Actor.agent("host-1"))
    via_django = DjangoMemoryStore(native=False, actor=Actor.agent("host-1"))
    for subject_id in ("n-native", "n-django"):
        agent_upsert(
            subject_id, ("seat_note", f"Aisle Nv9 {subject_id}"), ("meal_note", "Keeps Nv1")
        )
        agent_upsert(subject_id, ("seat_note", f"Window Nv8 {subject_id}"))
        stored_reply(subject_id, f"Aisle Nv9 {subject_id}")
    assert erasure.native_ready()

    assert on_loop(host_loop, native.delete_fact("n-native", "Seat Note")) is True
    assert run(via_django.delete_fact, "n-django", "Seat Note") is True

    for subject_id in ("n-native", "n-django"):
        assert occurrences(f"Nv9 {subject_id}") == {}
        assert occurrences(f"Nv8 {subject_id}") == {}
        assert not MemoryFact.objects.filter(subject_id=subject_id, key="seat_note").exists()
        assert IdempotencyRecord.objects.get(subject_id=subject_id).reply_erased_at
    assert [e for e in _erased_history("n-native") if e[0]] == [
        e for e in _erased_history("n-django") if e[0]
    ]
    last = FactEvent.objects.filter(subject_id="n-native").order_by("id").last()
    assert (last.action, last.actor_label, last.reason, last.redacted_at) == (
        EventAction.DELETED,
        "token:host-1",
        "deleted by the agent",
        None,
    )
    assert [e.action for e in selectors.fact_history("n-native", "seat_note")] == [
        EventAction.CREATED,
        EventAction.UPDATED,
        EventAction.DELETED,
    ]
    assert occurrences("Keeps Nv1") == {"memory_fact": 2, "memory_fact_event": 2}


@pytest.mark.django_db(transaction=True)
def test_native_delete_of_nothing_writes_nothing(host_loop):
    native = DjangoMemoryStore(native=True)
    run(DjangoMemoryStore(native=False).upsert_facts, "n-none", [fact("seat", "Aisle")])
    events = FactEvent.objects.count()
    assert on_loop(host_loop, native.delete_fact("n-none", "meal")) is False
    assert on_loop(host_loop, native.delete_fact("n-never-seen", "meal")) is False
    assert FactEvent.objects.count() == events
    assert not Subject.objects.filter(subject_id="n-never-seen").exists()
    assert on_loop(host_loop, native.delete_fact("n-none", "seat")) is True
    assert on_loop(host_loop, native.delete_fact("n-none", "seat")) is False


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("functions", "plan_in_lock"),
    [(True, True), (False, True), (False, False)],
    ids=["on", "DATABASE_LOCKED_FUNCTIONS-off", "DATABASE_PLAN_IN_LOCK-off-too"],
)
def test_native_delete_waits_for_a_writer_and_erases_what_it_wrote(
    functions, plan_in_lock, settings, host_loop
):
    """The lock comes first and the erasure takes its snapshot after it: a value that a
    concurrent upsert commits while the delete waits is erased with the rest, whether the two
    are one call of their server-side function (each statement of a PL/pgSQL function its own
    snapshot) or two statements (the lock inside the statement that asks for the generic plan
    waits as the bare lock does)."""
    settings.DATABASE_LOCKED_FUNCTIONS = functions
    settings.DATABASE_PLAN_IN_LOCK = plan_in_lock
    native = DjangoMemoryStore(native=True)
    agent_upsert("n-race", ("seat_note", "First value Wq1"))
    with transaction.atomic():
        agent_upsert("n-race", ("seat_note", "Written meanwhile Wq2"))  # holds the traveller's lock
        pending = asyncio.run_coroutine_threadsafe(
            native.delete_fact("n-race", "seat_note"), host_loop
        )
        with pytest.raises(TimeoutError):
            pending.result(0.5)
    assert pending.result(10) is True
    assert occurrences("Wq1") == {} and occurrences("Wq2") == {}
    assert [e.action for e in selectors.fact_history("n-race", "seat_note")] == [
        EventAction.CREATED,
        EventAction.UPDATED,
        EventAction.DELETED,
    ]


def _delete_in_a_thread(subject_id: str, key: str) -> concurrent.futures.Future:
    """`services.fact_delete` on a Django connection of its own (another thread's), as a
    portal request beside the agent's write."""

    def delete() -> bool:
        try:
            return services.fact_delete(subject_id=subject_id, key=key, actor=STAFF)
        finally:
            connection.close()

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    pending = pool.submit(delete)
    pool.shutdown(wait=False)
    return pending


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("prepared", [True, False], ids=["on", "DATABASE_PREPARED_WRITES-off"])
def test_the_services_delete_waits_for_a_writer_and_erases_what_it_wrote(prepared, settings):
    """The same race on Django's connection: the erasing statement, prepared on its generic plan
    or not, runs after the traveller's lock and erases the value a writer committed meanwhile."""
    settings.DATABASE_PREPARED_WRITES = prepared
    agent_upsert("s-race", ("seat_note", "First value Wq3"))
    with transaction.atomic():
        agent_upsert("s-race", ("seat_note", "Written meanwhile Wq4"))  # holds the traveller's lock
        pending = _delete_in_a_thread("s-race", "seat_note")
        with pytest.raises(concurrent.futures.TimeoutError):
            pending.result(0.5)
    assert pending.result(10) is True
    assert occurrences("Wq3") == {} and occurrences("Wq4") == {}
    assert [e.action for e in selectors.fact_history("s-race", "seat_note")] == [
        EventAction.CREATED,
        EventAction.UPDATED,
        EventAction.DELETED,
    ]
