"""Delivering events to recipients, signed by the Standard Webhooks specification.

The body carries the subject id, the keyed hash of the key, the receipt number, the path and the
time: never a value or a key. Each attempt is recorded (`delivery_record_attempt`, the one place
that counts outcomes); a failed delivery is tried again with exponential backoff for 3 days.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from memoryadmin.observability.metrics import count_webhook_delivery

from .models import (
    DeliveryAttempt,
    DeliveryStatus,
    OutboxEvent,
    WebhookDelivery,
    WebhookEventType,
)
from .services import privacy_request_acknowledged
from .signing_secrets import unseal

GIVE_UP_AFTER = timedelta(days=3)
FAILING_AFTER = 5  # consecutive failed attempts mark a recipient failing


def backoff_seconds(attempts: int) -> float:
    """Wait before the next try after `attempts` failed ones: base * 2^(n-1), capped."""
    base = settings.WEBHOOK_RETRY_BASE_SECONDS
    return min(settings.WEBHOOK_RETRY_MAX_SECONDS, base * (2 ** max(0, attempts - 1)))


def event_payload(event: OutboxEvent) -> dict[str, object]:
    data: dict[str, object] = {
        "subject_id": event.subject_id,
        "receipt": event.receipt or event.msg_id,
        "path": event.path,
        "occurred_at": event.occurred_at.isoformat(),
    }
    if event.key_hash:
        data["key_hash"] = event.key_hash
    if event.request_number:
        data["request"] = event.request_number
    return {
        "type": event.event_type,
        "timestamp": event.created_at.isoformat(),
        "data": data,
    }


def signed_request(event: OutboxEvent, secret: str, *, now: datetime) -> tuple[bytes, dict]:
    body = json.dumps(event_payload(event), separators=(",", ":"), sort_keys=True)
    signature = Webhook(secret).sign(event.msg_id, now, body)
    headers = {
        "content-type": "application/json",
        "webhook-id": event.msg_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
        "user-agent": "memoryadmin-webhooks/1",
    }
    return body.encode(), headers


@dataclass(frozen=True)
class Outcome:
    ok: bool
    status_code: int | None
    duration_ms: int
    error: str = ""


def _post(url: str, body: bytes, headers: dict) -> Outcome:
    started = time.monotonic()
    try:
        response = httpx.post(
            url,
            content=body,
            headers=headers,
            timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
            follow_redirects=False,
        )
    except httpx.HTTPError as exc:
        elapsed = int((time.monotonic() - started) * 1000)
        return Outcome(False, None, elapsed, type(exc).__name__[:100])
    elapsed = int((time.monotonic() - started) * 1000)
    return Outcome(200 <= response.status_code < 300, response.status_code, elapsed)


@transaction.atomic
def delivery_record_attempt(
    *, delivery_id: int, outcome: Outcome, attempted_at: datetime, replay: bool = False
) -> WebhookDelivery:
    """Record one attempt and decide what comes next: delivered, try again later, or give up
    (3 days after the first attempt). The one function that counts outcomes."""
    delivery = (
        WebhookDelivery.objects.select_for_update(of=("self", "recipient"))
        .select_related("recipient", "event")
        .get(pk=delivery_id)
    )
    DeliveryAttempt.objects.create(
        delivery=delivery,
        attempted_at=attempted_at,
        duration_ms=outcome.duration_ms,
        status_code=outcome.status_code,
        ok=outcome.ok,
        error=outcome.error,
        replay=replay,
    )
    recipient = delivery.recipient
    first_acknowledgement = outcome.ok and delivery.status != DeliveryStatus.DELIVERED
    delivery.attempts += 1
    if outcome.ok:
        delivery.status = DeliveryStatus.DELIVERED
        delivery.delivered_at = attempted_at
        delivery.next_attempt_at = None
        recipient.consecutive_failures = 0
        recipient.failing = False
        recipient.last_success_at = attempted_at
    else:
        first = delivery.created_at or attempted_at
        if delivery.status == DeliveryStatus.DELIVERED:
            pass  # a failed replay of a delivered event leaves it delivered
        elif attempted_at - first >= GIVE_UP_AFTER:
            delivery.status = DeliveryStatus.FAILED
            delivery.next_attempt_at = None
        else:
            delivery.status = DeliveryStatus.PENDING
            delivery.next_attempt_at = attempted_at + timedelta(
                seconds=backoff_seconds(delivery.attempts)
            )
        recipient.consecutive_failures += 1
        recipient.last_failure_at = attempted_at
        recipient.failing = recipient.consecutive_failures >= FAILING_AFTER
    delivery.save()
    recipient.save(
        update_fields=[
            "consecutive_failures",
            "failing",
            "last_success_at",
            "last_failure_at",
        ]
    )
    event = delivery.event
    if (
        first_acknowledgement
        and event.event_type == WebhookEventType.SUBJECT_ERASED
        and event.receipt
    ):
        privacy_request_acknowledged(
            receipt=event.receipt,
            recipient=recipient.name,
            at=attempted_at,
            attempts=delivery.attempts,
        )
    if outcome.ok:
        counted = "delivered"
    elif delivery.status == DeliveryStatus.FAILED:
        counted = "gave_up"
    else:
        counted = "failed"
    # Counted once the attempt is on record: a rolled-back attempt did not happen.
    transaction.on_commit(lambda: count_webhook_delivery(counted))
    return delivery


def delivery_attempt(*, delivery_id: int, replay: bool = False) -> WebhookDelivery | None:
    """Try one delivery now (outside any transaction: the HTTP call holds no lock). Returns the
    delivery as recorded, or None when there is nothing to do (delivered, given up, gone)."""
    delivery = (
        WebhookDelivery.objects.select_related("event", "recipient").filter(pk=delivery_id).first()
    )
    if delivery is None or not delivery.recipient.active:
        return None
    if not replay and delivery.status != DeliveryStatus.PENDING:
        return None
    now = timezone.now()
    body, headers = signed_request(
        delivery.event, unseal(delivery.recipient.secret_encrypted), now=now
    )
    outcome = _post(delivery.recipient.url, body, headers)
    return delivery_record_attempt(
        delivery_id=delivery_id, outcome=outcome, attempted_at=now, replay=replay
    )
