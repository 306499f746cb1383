"""The outbox and the delivery log are not kept forever: settled events older than
WEBHOOK_LOG_RETENTION_DAYS go with their deliveries and attempts, in batches; a delivery still
being tried stays; an erasure request keeps each recipient's outcome in its evidence, so its
page still says who acknowledged. Deliveries are real, to the receiver started by the test."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.privacy import flows, selectors
from memoryadmin.privacy.models import (
    DeliveryAttempt,
    DeliveryStatus,
    OutboxEvent,
    WebhookDelivery,
)
from memoryadmin.privacy.retention import webhook_log_sweep
from memoryadmin.privacy.tasks import webhook_log_sweep_task
from tests.factories import FactFactory
from tests.staff.conftest import viewer  # noqa: F401

pytestmark = [pytest.mark.django_db]


def _age(days: int) -> None:
    OutboxEvent.objects.update(created_at=timezone.now() - timedelta(days=days))


def test_the_default_is_90_days_swept_daily_by_beat():
    assert settings.WEBHOOK_LOG_RETENTION_DAYS == 90
    entry = settings.CELERY_BEAT_SCHEDULE["sweep-webhook-log"]
    assert entry["task"] == "memoryadmin.privacy.tasks.webhook_log_sweep_task"
    assert entry["schedule"] == 86400.0


def test_settled_events_go_with_their_log_and_the_erasure_keeps_who_acknowledged(
    recipient,
    receiver,
    client,
    viewer,  # noqa: F811
    django_capture_on_commit_callbacks,  # noqa: F811
):
    FactFactory(subject_id="FF-960001", key="meal", value="Asks for a kosher meal")
    FactFactory(subject_id="FF-960002", key="seat", value="Prefers the window")
    traveller = Actor.customer("FF-960001")
    with django_capture_on_commit_callbacks(execute=True):
        outcome = flows.privacy_forget(subject_id="FF-960001", actor=traveller, reason="")
    with django_capture_on_commit_callbacks(execute=True):
        request = flows.privacy_verify_erasure(request_id=outcome.request.pk, actor=traveller)
    receipt = request.evidence["receipt"]
    receiver.statuses = [500]  # this one is still being tried when the sweep runs
    with django_capture_on_commit_callbacks(execute=True):
        services.fact_delete(subject_id="FF-960002", key="seat", actor=Actor.system("t"))
    pending = WebhookDelivery.objects.get(status=DeliveryStatus.PENDING)
    assert WebhookDelivery.objects.filter(status=DeliveryStatus.DELIVERED).count() == 2
    _age(days=91)

    assert webhook_log_sweep_task() == 2  # eager: the task's batches until none is left

    assert list(OutboxEvent.objects.values_list("id", flat=True)) == [pending.event_id]
    assert list(WebhookDelivery.objects.values_list("id", flat=True)) == [pending.pk]
    assert list(DeliveryAttempt.objects.values_list("status_code", flat=True)) == [500]
    request.refresh_from_db()
    kept = request.evidence["recipients"]["CRM"]
    assert (kept["acknowledged"], kept["status"], kept["attempts"]) == (True, "delivered", 1)
    assert selectors.receipt_deliveries(receipt) == [
        {
            "recipient": "CRM",
            "traveller_names": {"en": "", "zh-hant": ""},
            "status": "delivered",
            "attempts": 1,
            "acknowledged": True,
            "at": kept["at"],
            "delivery_id": None,
        }
    ]
    client.force_login(viewer)
    page = client.get(f"/staff/privacy/requests/{request.number}/").content.decode()
    assert '<th scope="row">CRM</th><td>Yes</td>' in page
    assert "Asks for a kosher meal" not in str(request.evidence) and "meal" not in str(
        request.evidence["recipients"]
    )


def test_recent_events_and_undispatched_ones_stay(recipient):
    FactFactory(subject_id="FF-960003", key="seat", value="Prefers the window")
    services.fact_delete(subject_id="FF-960003", key="seat", actor=Actor.system("t"))
    _age(days=91)
    assert webhook_log_sweep() == 0  # never dispatched: nobody has been told yet
    OutboxEvent.objects.update(dispatched_at=timezone.now())
    _age(days=89)
    assert webhook_log_sweep() == 0  # within the retention
    _age(days=91)
    assert webhook_log_sweep() == 1


def test_the_sweep_goes_in_batches(recipient):
    for n in range(5):
        FactFactory(subject_id="FF-960004", key=f"topic_{n}", value=f"Value {n}")
        services.fact_delete(subject_id="FF-960004", key=f"topic_{n}", actor=Actor.system("t"))
    OutboxEvent.objects.update(dispatched_at=timezone.now())
    _age(days=120)
    assert [webhook_log_sweep(batch=2) for _ in range(4)] == [2, 2, 1, 0]
    assert OutboxEvent.objects.count() == 0


def test_a_removed_recipients_pending_delivery_is_not_retried_and_is_swept(recipient, receiver):
    from memoryadmin.privacy.recipients import webhook_recipient_remove
    from memoryadmin.privacy.tasks import webhook_retry_due_task

    receiver.statuses = [500]
    FactFactory(subject_id="FF-960005", key="seat", value="Prefers the window")
    services.fact_delete(subject_id="FF-960005", key="seat", actor=Actor.system("t"))
    assert webhook_retry_due_task() == 0  # dispatched and tried once (eager): 500
    WebhookDelivery.objects.update(next_attempt_at=timezone.now() - timedelta(hours=1))
    webhook_recipient_remove(recipient_id=recipient.pk, actor=Actor.system("t"), reason="gone")
    assert webhook_retry_due_task() == 0  # nothing re-sent to a removed recipient
    assert len(receiver.received) == 1
    _age(days=91)
    assert webhook_log_sweep() == 1 and WebhookDelivery.objects.count() == 0
