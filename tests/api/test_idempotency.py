"""Idempotency-Key: retried writes are answered from the first response and write nothing; a key
reused for another request is refused; records expire and are erased with the subject's facts."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from memoryadmin.api.models import IdempotencyRecord
from memoryadmin.api.tasks import purge_idempotency_records_task
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import EventAction, FactEvent, MemoryFact
from tests.support.dbscan import occurrences

from .conftest import db_state, facts_url, subject_url

SUBJECT = "FF-0004"
KEY = "6f1c2a4e-8d0b-4d59-9f5e-2f7f3c1b9a10"


def _put_one(agent, value: str, key: str = KEY, **headers):
    return agent.put(
        facts_url(SUBJECT, "seat_preference"),
        {"value": value},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
        **headers,
    )


@pytest.mark.django_db
def test_five_replays_write_once_and_answer_identically(agent):
    responses = [_put_one(agent, "Prefers aisle seats") for _ in range(5)]

    first, *replays = responses
    assert first.status_code == 201
    assert not first.has_header("Idempotent-Replayed")
    for replay in replays:
        assert replay.status_code == 201
        assert replay.json() == first.json()
        assert replay["ETag"] == first["ETag"] == '"1"'
        assert replay["Idempotent-Replayed"] == "true"
    assert FactEvent.objects.filter(subject_id=SUBJECT).count() == 1
    assert MemoryFact.objects.get(subject_id=SUBJECT, key="seat_preference").version == 1


@pytest.mark.django_db
def test_replay_is_answered_even_after_the_fact_moved_on(agent):
    first = _put_one(agent, "Prefers aisle seats")
    agent.put(facts_url(SUBJECT, "seat_preference"), {"value": "Window"}, format="json")
    before = db_state()

    replay = _put_one(agent, "Prefers aisle seats")

    assert replay.status_code == 201
    assert replay.json() == first.json()
    assert db_state() == before


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "url", "body", "status"),
    [
        ("put", facts_url(SUBJECT), {"facts": [{"key": "meal", "value": "Vegetarian"}]}, 200),
        ("post", subject_url(SUBJECT, "clear"), None, 200),
    ],
)
def test_bulk_put_and_clear_replay_too(agent, method, url, body, status):
    kwargs = {"format": "json"} if body is not None else {}
    first = getattr(agent, method)(url, body, HTTP_IDEMPOTENCY_KEY=KEY, **kwargs)
    state = db_state()
    again = getattr(agent, method)(url, body, HTTP_IDEMPOTENCY_KEY=KEY, **kwargs)

    assert first.status_code == again.status_code == status
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert db_state() == state


@pytest.mark.django_db
def test_delete_replay_is_204_not_404(agent):
    _put_one(agent, "Aisle", key="create-it")

    first = agent.delete(facts_url(SUBJECT, "seat_preference"), HTTP_IDEMPOTENCY_KEY=KEY)
    again = agent.delete(facts_url(SUBJECT, "seat_preference"), HTTP_IDEMPOTENCY_KEY=KEY)
    fresh = agent.delete(facts_url(SUBJECT, "seat_preference"), HTTP_IDEMPOTENCY_KEY="new-key")

    assert first.status_code == again.status_code == 204
    assert again["Idempotent-Replayed"] == "true"
    assert fresh.status_code == 404
    assert FactEvent.objects.filter(action=EventAction.DELETED).count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "url", "body", "headers"),
    [
        ("put", facts_url(SUBJECT, "seat_preference"), {"value": "Window seats"}, {}),
        ("put", facts_url(SUBJECT, "other_key"), {"value": "Prefers aisle seats"}, {}),
        (
            "put",
            facts_url(SUBJECT, "seat_preference"),
            {"value": "Prefers aisle seats"},
            {"HTTP_IF_MATCH": '"1"'},
        ),
        ("delete", facts_url(SUBJECT, "seat_preference"), None, {}),
    ],
)
def test_same_key_for_a_different_request_is_422_and_writes_nothing(
    agent, method, url, body, headers
):
    _put_one(agent, "Prefers aisle seats")
    before = db_state()

    kwargs = {"format": "json"} if body is not None else {}
    response = getattr(agent, method)(url, body, HTTP_IDEMPOTENCY_KEY=KEY, **headers, **kwargs)

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "idempotency_key_reused"
    assert db_state() == before


@pytest.mark.django_db
def test_keys_belong_to_one_token(make_agent):
    first_host = make_agent(name="host-a")
    second_host = make_agent(name="host-b")

    one = _put_one(first_host, "Aisle")
    two = _put_one(second_host, "Window")

    assert one.status_code == 201
    assert two.status_code == 200
    assert not two.has_header("Idempotent-Replayed")
    assert MemoryFact.objects.get(key="seat_preference").value == "Window"


@pytest.mark.django_db
def test_a_failed_write_is_not_stored_so_the_key_can_be_retried(agent):
    refused = _put_one(agent, "Card 4111 1111 1111 1111")
    accepted = agent.put(
        facts_url(SUBJECT, "seat_preference"),
        {"value": "Aisle"},
        format="json",
        HTTP_IDEMPOTENCY_KEY=KEY,
    )

    assert refused.status_code == 422
    assert accepted.status_code == 201
    assert IdempotencyRecord.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("key", ["k" * 256, "  ", "clé-non-ascii", "tab\there"])
def test_bad_keys_are_400_and_write_nothing(agent, key):
    before = db_state()

    response = _put_one(agent, "Aisle", key=key)

    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["error"]["fields"]
    assert db_state() == before


@pytest.mark.django_db
def test_a_255_character_key_is_fine(agent):
    assert _put_one(agent, "Aisle", key="k" * 255).status_code == 201


@pytest.mark.django_db
def test_expired_records_are_ignored_and_purged(agent):
    _put_one(agent, "Aisle")
    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(hours=25))
    agent.delete(facts_url(SUBJECT, "seat_preference"))

    again = _put_one(agent, "Aisle")

    assert again.status_code == 201
    assert not again.has_header("Idempotent-Replayed")
    assert FactEvent.objects.filter(action=EventAction.CREATED).count() == 2

    _put_one(agent, "Aisle", key="old-one")
    IdempotencyRecord.objects.filter(key="old-one").update(
        created_at=timezone.now() - timedelta(days=3)
    )
    assert purge_idempotency_records_task.delay().get() == 1  # the periodic task
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == [KEY]


@pytest.mark.django_db
def test_forget_subject_erases_only_that_subjects_replies(agent):
    _put_one(agent, "Aisle")
    agent.put(
        facts_url("FF-other", "seat_preference"),
        {"value": "Aisle"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="other",
    )

    services.subject_forget(subject_id=SUBJECT, actor=Actor.customer(SUBJECT))

    kept = dict(IdempotencyRecord.objects.values_list("subject_id", "response_body"))
    assert kept[SUBJECT] is None
    assert kept["FF-other"] is not None


@pytest.mark.django_db
@pytest.mark.parametrize("how", ["delete", "clear"])
def test_a_retry_after_the_travellers_facts_were_erased_is_recognised_and_not_run(agent, how):
    """The stored reply went with the facts, but the key, its request fingerprint and status
    stay: the retried PUT must not bring the erased value back."""
    first = _put_one(agent, "Aisle")
    assert first.status_code in {200, 201}
    if how == "delete":
        assert agent.delete(facts_url(SUBJECT, "seat_preference")).status_code == 204
    else:
        assert agent.post(f"/api/v1/subjects/{SUBJECT}/clear").status_code == 200
    record = IdempotencyRecord.objects.get(key=KEY)

    retry = _put_one(agent, "Aisle")

    assert retry.status_code == 409
    assert retry.json()["error"]["code"] == "already_processed"
    assert retry["Idempotent-Replayed"] == "true"
    assert agent.get(facts_url(SUBJECT)).json() == {"facts": []}
    assert (record.response_body, record.path, record.response_headers) == (None, "", {})
    assert record.request_hash and record.status_code == first.status_code
    assert record.reply_erased_at is not None
    assert _put_one(agent, "Window").json()["error"]["code"] == "idempotency_key_reused"


@pytest.mark.django_db(transaction=True)
def test_concurrent_retries_with_one_key_write_once(make_agent):
    host = make_agent()
    results: list = []
    barrier = threading.Barrier(5)

    def send() -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {host.secret}")
        barrier.wait()
        try:
            results.append(_put_one(client, "Prefers aisle seats"))
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(results) == 5
    assert {r.status_code for r in results} == {201}
    assert len({r.content for r in results}) == 1
    assert sum(not r.has_header("Idempotent-Replayed") for r in results) == 1
    assert FactEvent.objects.filter(subject_id=SUBJECT).count() == 1
    assert IdempotencyRecord.objects.count() == 1


def test_the_erasing_delete_does_not_keep_the_key_in_its_own_record(agent):
    """The record of an idempotent DELETE is written after the erasure ran: it must not be the
    one place the erased key survives (issue 19)."""
    agent.put(facts_url(SUBJECT, "pregnancy_zqx"), {"value": "Expecting in March"}, format="json")
    response = agent.delete(facts_url(SUBJECT, "pregnancy_zqx"), HTTP_IDEMPOTENCY_KEY="del-zqx")
    assert response.status_code == 204
    assert IdempotencyRecord.objects.filter(key="del-zqx").exists()
    assert occurrences("pregnancy_zqx") == {}
