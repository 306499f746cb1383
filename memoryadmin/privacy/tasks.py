"""Celery tasks: dispatch the outbox, deliver, retry what is due, sweep the old delivery log.
Thin: the work is in `outbox`, `webhooks` and `services`."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from . import outbox, retention, webhooks
from .models import DeliveryStatus, WebhookDelivery


def _queue(delivery_ids: list[int], *, countdown: float = 0) -> None:
    for delivery_id in delivery_ids:
        webhook_deliver_task.apply_async((delivery_id,), countdown=countdown)


@shared_task(ignore_result=True)
def outbox_dispatch_task() -> int:
    """Fan undispatched events out to deliveries and queue each (in batches until none)."""
    total = 0
    while True:
        made = outbox.outbox_dispatch()
        if not made and not outbox.OutboxEvent.objects.filter(dispatched_at__isnull=True).exists():
            return total
        _queue(made)
        total += len(made)


@shared_task(ignore_result=True, acks_late=True)
def webhook_deliver_task(delivery_id: int) -> str:
    delivery = webhooks.delivery_attempt(delivery_id=delivery_id)
    if delivery is None:
        return "nothing to do"
    # Eager (make run): beat's sweep retries instead of a recursion of immediate tries.
    eager = settings.CELERY_TASK_ALWAYS_EAGER
    if delivery.status == DeliveryStatus.PENDING and delivery.next_attempt_at and not eager:
        wait = max(0.0, (delivery.next_attempt_at - timezone.now()).total_seconds())
        _queue([delivery.pk], countdown=wait)
    return delivery.status


@shared_task(ignore_result=True)
def webhook_retry_due_task() -> int:
    """On beat: dispatch what a native erasure wrote, and re-send deliveries whose next try is
    well past due (a lost message, a worker restart)."""
    outbox_dispatch_task()
    late = timezone.now() - timedelta(seconds=settings.WEBHOOK_RETRY_GRACE_SECONDS)
    due = list(
        WebhookDelivery.objects.filter(
            status=DeliveryStatus.PENDING, next_attempt_at__lte=late, recipient__active=True
        ).values_list("id", flat=True)[  # a removed one is not tried
            :1000
        ]
    )
    _queue(due)
    return len(due)


@shared_task(ignore_result=True)
def webhook_log_sweep_task() -> int:
    """On beat (daily): settled events past `WEBHOOK_LOG_RETENTION_DAYS`, with their deliveries
    and attempts, in batches of one transaction each until none is left."""
    total = 0
    while True:
        swept = retention.webhook_log_sweep()
        total += swept
        if not swept:
            return total
