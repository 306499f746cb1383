"""The outbox: events written in the transaction of the change they report, dispatched to the
recipients that want them after it commits.

An erasure writes its events inside facts' erasing statement (the SQL parts registered from
`PrivacyConfig.ready()`), so an erasure never commits without its events and an event never
exists without its erasure. A person's correction writes its event from inside `fact_edit` (a
`facts.corrections` listener), so every correction path sends one; a completed request's event
is written by the privacy services in their transaction through `outbox_write`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from memoryadmin.facts.corrections import Corrected, RestrictionChanged
from memoryadmin.facts.erasure import key_digest

from .models import (
    ART19_EVENTS,
    ERASURE_EVENTS,
    OutboxEvent,
    WebhookDelivery,
    WebhookEventType,
    WebhookRecipient,
)
from .sql import OUTBOX_FACTS_SQL, OUTBOX_SUBJECT_SQL, SQL_UNDISPATCHED

__all__ = [
    "OUTBOX_FACTS_SQL",
    "OUTBOX_SUBJECT_SQL",
    "outbox_dispatch",
    "outbox_dispatch_soon",
    "outbox_fact_corrected",
    "outbox_fact_restriction",
    "outbox_stamp_corrected",
    "outbox_write",
]

DISPATCH_BATCH = 500
logger = logging.getLogger(__name__)
_PATHS = {"customer": "traveller"}


def new_msg_id() -> str:
    return "msg_" + uuid.uuid4().hex


def recipient_wants(events: Iterable[str] | None, event_type: str) -> bool:
    """Whether a recipient registered for `events` receives `event_type`: the ones it named,
    and (Art. 19) a rectification or a restriction when it is told of erasures. A correction is
    one event per recipient: `memory.fact.corrected` to one that takes it (as before), else
    `memory.rectified`, its Art. 19 name."""
    named = set(events or [])
    if event_type == WebhookEventType.RECTIFIED and WebhookEventType.FACT_CORRECTED in named:
        return False
    if event_type in named:
        return True
    return event_type in ART19_EVENTS and bool(named.intersection(ERASURE_EVENTS))


def _wanted(event_type: str) -> bool:
    # Recipients are few: read them all.
    return any(
        recipient_wants(events, event_type)
        for events in WebhookRecipient.objects.filter(active=True).values_list("events", flat=True)
    )


def outbox_write(
    *,
    event_type: str,
    subject_id: str,
    key_hash: str = "",
    receipt: str = "",
    path: str = "",
    request_number: str = "",
    occurred_at: datetime | None = None,
) -> OutboxEvent | None:
    """Write one event in the caller's transaction (None when no recipient wants it)."""
    if not _wanted(event_type):
        return None
    now = timezone.now()
    event = OutboxEvent.objects.create(
        msg_id=new_msg_id(),
        event_type=event_type,
        subject_id=subject_id,
        key_hash=key_hash,
        receipt=receipt,
        path=path,
        request_number=request_number,
        occurred_at=occurred_at or now,
        created_at=now,
    )
    transaction.on_commit(outbox_dispatch_soon)
    return event


def outbox_fact_corrected(corrected: Corrected) -> None:
    """A person corrected a value (staff's edit form, the traveller's portal): the
    `memory.fact.corrected` event and its Art. 19 twin `memory.rectified` (each written only
    when a recipient wants it), in the correcting transaction (a `facts.corrections`
    listener). The keyed hash of the key, never the key or either value."""
    for event_type in (WebhookEventType.FACT_CORRECTED, WebhookEventType.RECTIFIED):
        outbox_write(
            event_type=event_type,
            subject_id=corrected.subject_id,
            key_hash=key_digest(corrected.subject_id, corrected.key),
            path=_PATHS.get(corrected.actor_kind, corrected.actor_kind),
        )


def outbox_fact_restriction(change: RestrictionChanged) -> None:
    """A fact's use stopped or resumed: `memory.restricted` or `memory.unrestricted` (Art. 19),
    in that transaction (a `facts.corrections` restriction listener). The keyed hash, the path,
    and for a resumption the outcome as the receipt; never the value or the traveller's note."""
    outbox_write(
        event_type=(
            WebhookEventType.RESTRICTED if change.restricted else WebhookEventType.UNRESTRICTED
        ),
        subject_id=change.subject_id,
        key_hash=key_digest(change.subject_id, change.key),
        path=_PATHS.get(change.actor_kind, change.actor_kind),
    )


def outbox_stamp_corrected(*, subject_id: str, key_hash: str, request_number: str) -> None:
    """Give this transaction's correction events (`memory.fact.corrected`, `memory.rectified`)
    the rectification request they answer (the correction is written before the request
    exists). The caller holds the traveller's lock."""
    for event_type in (WebhookEventType.FACT_CORRECTED, WebhookEventType.RECTIFIED):
        newest = (
            OutboxEvent.objects.filter(
                subject_id=subject_id,
                event_type=event_type,
                key_hash=key_hash,
                request_number="",
            )
            .order_by("-id")
            .values_list("id", flat=True)
            .first()
        )
        if newest is not None:
            OutboxEvent.objects.filter(id=newest).update(request_number=request_number)


def outbox_stamp_subject_erased(*, subject_id: str, receipt: str, path: str) -> None:
    """Give this transaction's "forget everything" event its receipt number and path (the
    erasing statement writes it before the receipt exists). The caller holds the traveller's
    lock, so the newest such event without a receipt is this transaction's."""
    newest = (
        OutboxEvent.objects.filter(
            subject_id=subject_id, event_type=WebhookEventType.SUBJECT_ERASED, receipt=""
        )
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    if newest is not None:
        OutboxEvent.objects.filter(id=newest).update(receipt=receipt, path=path)


_dispatcher: Callable[[], object] | None = None


def outbox_dispatcher_set(send: Callable[[], object]) -> None:
    """Set from PrivacyConfig.ready(): how to queue the dispatch task (the tasks module
    imports this one, not the other way round)."""
    global _dispatcher
    _dispatcher = send


def outbox_dispatch_soon() -> None:
    """After commit: hand the dispatch to Celery (beat runs it too, for the store's native
    path, which has no commit hook, and for a broker that was down)."""
    if _dispatcher is None:
        return
    try:
        _dispatcher()
    except Exception:  # noqa: BLE001 - the broker is down: beat will dispatch
        logger.warning("webhook dispatch not queued; beat will run it")


@transaction.atomic
def outbox_dispatch(*, limit: int = DISPATCH_BATCH) -> list[int]:
    """Make one delivery per (event, recipient that wants it) for undispatched events; returns
    the new deliveries' ids, for the caller to queue after commit."""
    with connection.cursor() as cursor:
        cursor.execute(SQL_UNDISPATCHED, {"limit": limit})
        ids = [row[0] for row in cursor.fetchall()]
    if not ids:
        return []
    events = list(OutboxEvent.objects.filter(id__in=ids))
    recipients = list(WebhookRecipient.objects.filter(active=True))
    deliveries = [
        WebhookDelivery(event=event, recipient=recipient, next_attempt_at=timezone.now())
        for event in events
        for recipient in recipients
        if recipient_wants(recipient.events, event.event_type)
    ]
    made = WebhookDelivery.objects.bulk_create(deliveries, ignore_conflicts=False)
    OutboxEvent.objects.filter(id__in=ids).update(dispatched_at=timezone.now())
    return [delivery.pk for delivery in made]


def subject_events(subject_id: str) -> Iterable[OutboxEvent]:
    return OutboxEvent.objects.filter(subject_id=subject_id).order_by("id")
