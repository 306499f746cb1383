"""`make run` (serve_dev) retries webhook deliveries in its own process: no worker, no beat."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import transaction

from memoryadmin.privacy.models import DeliveryStatus, WebhookDelivery, WebhookEventType
from memoryadmin.privacy.outbox import outbox_write
from memoryadmin.staff.management.commands.serve_dev import sweep_forever


@pytest.mark.django_db(transaction=True)
def test_a_recipient_briefly_down_is_retried_by_the_in_process_sweep(recipient, receiver, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True  # as with no broker
    settings.WEBHOOK_RETRY_BASE_SECONDS = 1.0
    settings.WEBHOOK_RETRY_GRACE_SECONDS = 0.0  # its default with no broker
    receiver.statuses = [503]  # down for the first try
    with transaction.atomic():
        outbox_write(event_type=WebhookEventType.SUBJECT_ERASED, subject_id="FF-900001")
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == DeliveryStatus.PENDING and delivery.attempts == 1  # sent on commit

    stop = threading.Event()
    sweeper = threading.Thread(target=sweep_forever, args=(stop, 0.5), daemon=True)
    sweeper.start()
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            delivery.refresh_from_db()
            if delivery.status == DeliveryStatus.DELIVERED:
                break
            time.sleep(0.2)
    finally:
        stop.set()
        sweeper.join(timeout=10)
    assert delivery.status == DeliveryStatus.DELIVERED and delivery.attempts == 2
    assert len(receiver.received) == 2
