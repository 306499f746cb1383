"""Delivery by a real Celery worker after commit, with a retry after a 500; the store's native
erasure writes its events in its own statement; pg_dump after a correction and erasures shows no
value or key in the outbox or the delivery log. Committed data (transactional tests): the
worker and the pool are other connections."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest
import redis
from django.db import connection

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.store import DjangoMemoryStore
from memoryadmin.privacy.models import DeliveryAttempt, DeliveryStatus, OutboxEvent, WebhookDelivery
from tests.extraction.worker import Worker, publishing_to, wait_for
from tests.factories import FactFactory
from tests.facts.store_contract import run
from tests.facts.test_store_native import OnHostLoop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

VALUE = "Allergic to peanuts on long-haul flights"
KEY = "peanut_allergy"


@pytest.fixture
def worker() -> Iterator[Worker]:
    url = os.environ["TEST_BROKER_URL"]
    redis.Redis.from_url(url).flushdb()
    running = Worker(
        broker_url=url,
        name="webhook-worker",
        env={"WEBHOOK_RETRY_BASE_SECONDS": "1"},
    ).start()
    try:
        with publishing_to(url):
            yield running
    finally:
        running.stop()
        redis.Redis.from_url(url).flushdb()


def test_a_500_then_200_is_acknowledged_once_after_a_retry(recipient, receiver, worker):
    receiver.statuses = [500]
    FactFactory(subject_id="FF-910001", key=KEY, value=VALUE)
    services.fact_delete(
        subject_id="FF-910001",
        key=KEY,
        actor=Actor.customer("FF-910001"),
        reason="deleted in the portal",
    )  # commits: the worker takes it

    delivery = wait_for(
        lambda: WebhookDelivery.objects.filter(status=DeliveryStatus.DELIVERED).first(), timeout=30
    )
    assert [item.headers["webhook-id"] for item in receiver.received] == [
        delivery.event.msg_id,
        delivery.event.msg_id,
    ]  # the same event twice: the receiver deduplicates by webhook-id
    assert all(item.verified for item in receiver.received)
    attempts = list(DeliveryAttempt.objects.order_by("id").values_list("status_code", "ok"))
    assert attempts == [(500, False), (200, True)]
    assert delivery.attempts == 2
    assert WebhookDelivery.objects.count() == 1  # one delivery: acknowledged once


def test_the_native_store_path_writes_its_event_in_the_erasing_statement(
    recipient, host_loop, settings
):
    settings.MEMORY_STORE_NATIVE_ASYNC = True
    FactFactory(subject_id="FF-910002", key=KEY, value=VALUE)
    store = OnHostLoop(DjangoMemoryStore(native=True), host_loop)
    assert run(store.delete_fact, "FF-910002", KEY) is True
    [event] = OutboxEvent.objects.all()
    assert (event.event_type, event.subject_id, event.path) == (
        "memory.fact.erased",
        "FF-910002",
        "agent",
    )
    assert event.key_hash.startswith("#")


def test_pg_dump_after_erasure_shows_no_value_or_key_in_outbox_or_log(recipient, receiver):
    FactFactory(subject_id="FF-910003", key=KEY, value=VALUE)
    meal = FactFactory(subject_id="FF-910003", key="meal_choice", value="Orders the Hindu meal")
    services.fact_edit(
        subject_id="FF-910003",
        key="meal_choice",
        value="Orders the Jain meal",
        expected_version=meal.version,
        actor=Actor.customer("FF-910003"),
    )
    services.fact_delete(subject_id="FF-910003", key=KEY, actor=Actor.customer("FF-910003"))
    services.subject_forget(subject_id="FF-910003", actor=Actor.customer("FF-910003"))
    from memoryadmin.privacy.tasks import outbox_dispatch_task

    outbox_dispatch_task()  # eager: dispatch and deliver now
    assert sorted(OutboxEvent.objects.values_list("event_type", flat=True)) == [
        "memory.fact.corrected",
        "memory.fact.erased",
        "memory.subject.erased",
    ]
    assert DeliveryAttempt.objects.count() == 3
    conf = connection.settings_dict
    dump = subprocess.run(  # noqa: S603 - fixed argv
        [
            "pg_dump",
            "--data-only",
            "-h",
            conf["HOST"] or "127.0.0.1",
            "-p",
            str(conf["PORT"] or 5432),
            "-U",
            conf["USER"] or "postgres",
            conf["NAME"],
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    privacy = "\n".join(block for block in dump.split("\n\n") if "privacy_webhook" in block)
    assert "privacy_webhook_outbox" in privacy and "privacy_webhook_attempt" in privacy
    for secret in (VALUE, "peanut", KEY, "Hindu meal", "Jain meal", "meal_choice"):
        assert secret not in privacy
        assert secret not in dump  # nor anywhere else after the erasures
