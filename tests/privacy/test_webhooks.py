"""Erasure propagation (GDPR Art. 19) against a real HTTP receiver started by the test, which
verifies every request with the standardwebhooks library: delivered and verified, no value or
key in the body, an event from every erasure path, a rollback leaves no event."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.erasure import key_digest
from memoryadmin.facts.models import MemoryFact
from memoryadmin.privacy.models import (
    DeliveryAttempt,
    DeliveryStatus,
    OutboxEvent,
    WebhookDelivery,
)
from memoryadmin.privacy.recipients import webhook_recipient_add
from tests.factories import FactFactory, UserFactory

pytestmark = pytest.mark.django_db

VALUE = "Needs a wheelchair at Taoyuan gate C5"
KEY = "gate_assistance_c5"


def _fact(subject_id: str = "FF-900001", key: str = KEY, value: str = VALUE) -> MemoryFact:
    return FactFactory(subject_id=subject_id, key=key, value=value, category="constraint")


def test_a_staff_erasure_is_delivered_signed_and_verified_without_value_or_key(
    recipient, receiver, django_capture_on_commit_callbacks
):
    _fact()
    staff = UserFactory(username="sam")
    with django_capture_on_commit_callbacks(execute=True):
        services.fact_delete(
            subject_id="FF-900001", key=KEY, actor=Actor.staff(staff), reason="asked on the phone"
        )

    [got] = receiver.received
    assert got.verified, "the receiver's standardwebhooks check failed"
    assert got.headers["webhook-id"].startswith("msg_")
    assert got.headers["webhook-signature"].startswith("v1,")
    assert got.payload["type"] == "memory.fact.erased"
    assert got.payload["data"] == {
        "subject_id": "FF-900001",
        "key_hash": key_digest("FF-900001", KEY),
        "receipt": got.headers["webhook-id"],
        "path": "staff",
        "occurred_at": got.payload["data"]["occurred_at"],
    }
    body = got.body.decode()
    assert VALUE not in body and "wheelchair" not in body
    assert KEY not in body and "gate_assistance" not in body
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == DeliveryStatus.DELIVERED
    [attempt] = DeliveryAttempt.objects.all()
    assert (attempt.status_code, attempt.ok) == (200, True)
    assert attempt.duration_ms >= 0


def test_a_tampered_body_fails_the_receivers_check(recipient, receiver):
    """The receiver really verifies: a request signed with another secret is refused."""
    from memoryadmin.privacy import webhooks
    from memoryadmin.privacy.signing_secrets import new_secret

    _fact()
    services.fact_delete(subject_id="FF-900001", key=KEY, actor=Actor.system("t"))
    event = OutboxEvent.objects.get()
    body, headers = webhooks.signed_request(event, new_secret(), now=timezone.now())
    outcome = webhooks._post(receiver.url, body, headers)
    assert outcome.ok  # the receiver answers 200 but records the failure
    assert receiver.received[-1].verified is False


def test_every_erasure_path_writes_its_event(recipient):
    """traveller, staff, agent and forget everything (review and retention below)."""
    staff = Actor.staff(UserFactory(username="sam"))
    for n in range(4):
        _fact(key=f"topic_{n}", value=f"Value number {n}")
    services.fact_delete(subject_id="FF-900001", key="topic_0", actor=Actor.customer("FF-900001"))
    services.fact_delete(subject_id="FF-900001", key="topic_1", actor=staff)
    services.fact_delete(subject_id="FF-900001", key="topic_2", actor=Actor.agent("host-1"))
    services.subject_forget(subject_id="FF-900001", actor=Actor.customer("FF-900001"))

    paths = list(OutboxEvent.objects.order_by("id").values_list("event_type", "path"))
    assert paths[:3] == [
        ("memory.fact.erased", "traveller"),
        ("memory.fact.erased", "staff"),
        ("memory.fact.erased", "agent"),
    ]
    assert ("memory.subject.erased", "forget_everything") in paths
    for event in OutboxEvent.objects.all():
        assert event.key_hash == "" or event.key_hash.startswith("#")


def test_review_rejection_and_retention_sweep_paths(recipient):
    staff = Actor.staff(UserFactory(username="sam"))
    FactFactory(
        subject_id="FF-900003",
        key="mobility",
        value="Uses a wheelchair",
        actor=Actor.agent("host-1"),
    )
    fact = MemoryFact.objects.get(subject_id="FF-900003")
    assert fact.status == "pending_review"
    services.fact_reject(subject_id="FF-900003", key=fact.key, actor=staff, reason="not said")
    _fact(subject_id="FF-900004", key="old_topic", value="Old trip context")
    services.fact_expire(subject_id="FF-900004", key="old_topic", actor=staff, reason="trip over")
    services.facts_sweep_expired(now=timezone.now() + timedelta(seconds=1))
    paths = list(OutboxEvent.objects.order_by("id").values_list("subject_id", "path"))
    assert paths == [("FF-900003", "review"), ("FF-900004", "retention")]


def test_an_erasure_rolled_back_leaves_no_event(recipient, receiver):
    _fact()

    class Boom(Exception):
        pass

    with pytest.raises(Boom), transaction.atomic():
        services.fact_delete(subject_id="FF-900001", key=KEY, actor=Actor.system("t"))
        assert OutboxEvent.objects.count() == 1  # written in the erasing statement
        raise Boom
    assert OutboxEvent.objects.count() == 0
    assert MemoryFact.objects.filter(key=KEY).exists()
    assert receiver.received == []


def test_no_recipient_no_outbox_rows():
    _fact()
    services.fact_delete(subject_id="FF-900001", key=KEY, actor=Actor.system("t"))
    assert OutboxEvent.objects.count() == 0


def test_only_the_events_a_recipient_chose(receiver, django_capture_on_commit_callbacks):
    row, secret = webhook_recipient_add(
        name="Warehouse",
        url=receiver.url,
        events=["memory.subject.erased"],
        actor=Actor.system("t"),
    )
    receiver.secret = secret
    _fact()
    with django_capture_on_commit_callbacks(execute=True):
        services.fact_delete(subject_id="FF-900001", key=KEY, actor=Actor.system("t"))
    with django_capture_on_commit_callbacks(execute=True):
        services.subject_forget(subject_id="FF-900001", actor=Actor.system("t"))
    assert [p["type"] for p in receiver.payloads()] == ["memory.subject.erased"]
    assert receiver.received[0].verified


def test_http_urls_need_debug(settings):
    from memoryadmin.privacy.errors import RequestInvalid

    settings.DEBUG = False
    with pytest.raises(RequestInvalid) as refused:
        webhook_recipient_add(
            name="CRM", url="http://crm.example/hook", events=None, actor=Actor.system("t")
        )
    assert "https://" in refused.value.fields["url"]
    row, secret = webhook_recipient_add(
        name="CRM", url="https://crm.example/hook", events=None, actor=Actor.system("t")
    )
    assert secret.startswith("whsec_")
    assert secret not in row.secret_encrypted


def test_a_failing_recipient_is_marked_after_repeated_failures(recipient, receiver):
    from memoryadmin.privacy import webhooks

    receiver.statuses = [500] * 10
    _fact()
    services.fact_delete(subject_id="FF-900001", key=KEY, actor=Actor.system("t"))
    from memoryadmin.privacy.outbox import outbox_dispatch

    [delivery_id] = outbox_dispatch()
    waits = []
    for _ in range(webhooks.FAILING_AFTER):
        delivery = webhooks.delivery_attempt(delivery_id=delivery_id)
        waits.append((delivery.next_attempt_at - timezone.now()).total_seconds())
    recipient.refresh_from_db()
    assert recipient.failing
    assert delivery.status == DeliveryStatus.PENDING
    assert waits == sorted(waits) and waits[-1] > waits[0] * 4  # exponential backoff
    # three days after the first attempt it gives up
    WebhookDelivery.objects.filter(pk=delivery_id).update(
        created_at=timezone.now() - timedelta(days=3, minutes=1)
    )
    assert webhooks.delivery_attempt(delivery_id=delivery_id).status == DeliveryStatus.FAILED
