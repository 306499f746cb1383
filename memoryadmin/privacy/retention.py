"""How long the outbox and the delivery log are kept: `WEBHOOK_LOG_RETENTION_DAYS` (90 by default)
after the event was written, once every delivery of it is settled (acknowledged, given up, or for
a recipient since removed). The event goes with its deliveries and their attempts.

An erasure request's page and its portal receipt list each recipient and whether it acknowledged;
they read the delivery log while it is kept. Before a "forget everything" event goes, its outcome
per recipient (name, acknowledged or not, when, attempts) is copied into the erasure request's
evidence (`evidence["recipients"]`), kept as long as the request, so the proof outlives the log.
None of these rows holds a value or a key.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from .models import (
    DeliveryStatus,
    OutboxEvent,
    PrivacyRequest,
    RequestKind,
    WebhookDelivery,
    WebhookEventType,
)

SWEEP_BATCH = 1000
logger = logging.getLogger(__name__)


def _keep_outcomes(event_ids: list[int]) -> None:
    """Copy each "forget everything" event's outcome per recipient into its erasure request."""
    rows = list(
        WebhookDelivery.objects.filter(
            event_id__in=event_ids,
            event__event_type=WebhookEventType.SUBJECT_ERASED,
        )
        .exclude(event__receipt="")
        .values_list("event__receipt", "recipient__name", "status", "delivered_at", "attempts")
    )
    if not rows:
        return
    outcomes: dict[str, dict[str, dict[str, object]]] = {}
    for receipt, name, status, delivered_at, attempts in rows:
        outcomes.setdefault(receipt, {})[name] = {
            "acknowledged": delivered_at is not None,
            "status": status,
            "at": delivered_at.isoformat() if delivered_at else "",
            "attempts": attempts,
        }
    requests = list(
        PrivacyRequest.objects.select_for_update().filter(
            kind=RequestKind.ERASURE, evidence__receipt__in=list(outcomes)
        )
    )
    for request in requests:
        kept = dict(request.evidence.get("recipients") or {})
        kept.update(outcomes[request.evidence["receipt"]])
        request.evidence = {**request.evidence, "recipients": kept}
    PrivacyRequest.objects.bulk_update(requests, ["evidence"])


def log_retention_cutoff(now: datetime) -> datetime:
    """The outbox and delivery log written before this time are past their retention."""
    return now - timedelta(days=settings.WEBHOOK_LOG_RETENTION_DAYS)


def webhook_log_sweep(*, now: datetime | None = None, batch: int = SWEEP_BATCH) -> int:
    """Delete one batch of settled events older than the retention, with their deliveries and
    attempts (one transaction); returns how many events went, so the caller repeats until 0."""
    cutoff = log_retention_cutoff(now or timezone.now())
    unsettled = WebhookDelivery.objects.filter(
        event=OuterRef("pk"), status=DeliveryStatus.PENDING, recipient__active=True
    )
    with transaction.atomic():
        ids = list(
            OutboxEvent.objects.select_for_update(skip_locked=True)
            .filter(created_at__lt=cutoff, dispatched_at__isnull=False)
            .filter(~Exists(unsettled))
            .order_by("id")
            .values_list("id", flat=True)[:batch]
        )
        if not ids:
            return 0
        _keep_outcomes(ids)
        OutboxEvent.objects.filter(id__in=ids).delete()  # cascades: deliveries, attempts
    logger.info("webhook log: swept %d events written before %s", len(ids), cutoff)
    return len(ids)
