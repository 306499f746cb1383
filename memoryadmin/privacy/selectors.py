"""Reads of privacy requests and webhook deliveries, for the staff pages, the portal and the
metrics (`privacy_requests_due_counts`)."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from memoryadmin.facts.choices import ActorKind, EventAction
from memoryadmin.facts.keyhash import is_key_digest, key_digest
from memoryadmin.facts.models import FactEvent, MemoryFact, Subject

from . import clock
from .models import (
    WORKING,
    DeliveryAttempt,
    OutboxEvent,
    PrivacyRequest,
    RequestKind,
    RequestStatus,
    WebhookDelivery,
    WebhookEventType,
    WebhookRecipient,
)

DUE_SOON_DAYS = 7


def privacy_requests_due_counts() -> dict[str, int]:
    """Open requests due within 7 days (not yet overdue) and overdue, in one query."""
    today = clock.today()
    counts = PrivacyRequest.objects.filter(status__in=WORKING, duplicate_of=None).aggregate(
        overdue=Count("id", filter=Q(due_on__lt=today)),
        due_7d=Count(
            "id", filter=Q(due_on__gte=today, due_on__lte=today + timedelta(days=DUE_SOON_DAYS))
        ),
    )
    return {"due_7d": counts["due_7d"], "overdue": counts["overdue"]}


def privacy_requests(
    *, kind: str = "", status: str = "", channel: str = "", subject_id: str = ""
) -> QuerySet[PrivacyRequest]:
    """Requests, newest recorded first, filtered."""
    rows = PrivacyRequest.objects.select_related("handled_by", "duplicate_of").annotate(
        known=Exists(Subject.objects.filter(subject_id=OuterRef("subject_id")))
    )
    if kind:
        rows = rows.filter(kind=kind)
    if status:
        rows = rows.filter(status=status)
    if channel:
        rows = rows.filter(channel=channel)
    if subject_id:
        rows = rows.filter(subject_id=subject_id)
    return rows.order_by("-created_at", "-id")


def request_state(request: PrivacyRequest, today: date | None = None) -> str:
    """ "overdue", "due_soon" or "" for an open request's clock ("" for a duplicate: it has no
    clock of its own)."""
    if not request.clocked:
        return ""
    today = today or clock.today()
    if request.due_on < today:
        return "overdue"
    if request.due_on <= today + timedelta(days=DUE_SOON_DAYS):
        return "due_soon"
    return ""


def privacy_request_get(number: str) -> PrivacyRequest | None:
    return (
        PrivacyRequest.objects.select_related("handled_by", "duplicate_of")
        .filter(number=number)
        .first()
    )


def request_duplicates(request: PrivacyRequest) -> list[PrivacyRequest]:
    """The requests linked to this one as its duplicates, oldest first."""
    return list(request.duplicates.order_by("created_at", "id"))


def erasure_request_for_receipt(receipt: str) -> PrivacyRequest | None:
    return (
        PrivacyRequest.objects.filter(kind=RequestKind.ERASURE, evidence__receipt=receipt)
        .order_by("id")
        .first()
    )


def request_steps(request: PrivacyRequest) -> list:
    return list(request.steps.select_related("actor_user").order_by("created_at", "id"))


def receipt_deliveries(receipt: str) -> list[dict[str, object]]:
    """Each recipient of a forget-everything receipt and whether it acknowledged (2xx): from the
    delivery log while it is kept, then from the erasure request's evidence (`retention`)."""
    return receipts_deliveries([receipt]).get(receipt, [])


def receipts_deliveries(receipts: Iterable[str]) -> dict[str, list[dict[str, object]]]:
    """`receipt_deliveries` of many receipts at once, for a page listing several (three
    queries whatever their number)."""
    wanted = sorted({receipt for receipt in receipts if receipt})
    if not wanted:
        return {}
    found: dict[str, list[dict[str, object]]] = defaultdict(list)
    rows = (
        WebhookDelivery.objects.filter(
            event__receipt__in=wanted, event__event_type=WebhookEventType.SUBJECT_ERASED
        )
        .select_related("recipient", "event")
        .order_by("recipient__name")
    )
    for row in rows:
        found[row.event.receipt].append(
            {
                "recipient": row.recipient.name,
                "traveller_names": _traveller_names(row.recipient),
                "status": row.status,
                "attempts": row.attempts,
                "acknowledged": row.delivered_at is not None,
                "at": row.delivered_at.isoformat() if row.delivered_at else "",
                "delivery_id": row.pk,
            }
        )
    # Past the delivery log's retention: the outcomes the sweep kept in the erasure request.
    missing = [receipt for receipt in wanted if receipt not in found]
    kept: dict[str, dict] = {}
    if missing:
        requests = PrivacyRequest.objects.filter(
            kind=RequestKind.ERASURE, evidence__receipt__in=missing
        ).order_by("id")
        for request in requests:
            kept.setdefault(request.evidence["receipt"], request.evidence.get("recipients") or {})
    names = {name for outcomes in kept.values() for name in outcomes}
    named = {r.name: r for r in WebhookRecipient.objects.filter(name__in=names)} if names else {}
    for receipt, outcomes in kept.items():
        found[receipt] = [
            {
                "recipient": name,
                "traveller_names": _traveller_names(named.get(name)),
                "status": outcome.get("status", ""),
                "attempts": outcome.get("attempts", 0),
                "acknowledged": bool(outcome.get("acknowledged")),
                "at": outcome.get("at", ""),
                "delivery_id": None,
            }
            for name, outcome in sorted(outcomes.items())
        ]
    return dict(found)


def _traveller_names(recipient: WebhookRecipient | None) -> dict[str, str]:
    """What a traveller reads for this recipient, by portal language ("" when not given: the
    portal then says "another of our systems", never the internal name)."""
    if recipient is None:
        return {"en": "", "zh-hant": ""}
    return {"en": recipient.traveller_name_en, "zh-hant": recipient.traveller_name_zh_hant}


def traveller_requests(subject_id: str, *, limit: int = 50) -> list[PrivacyRequest]:
    """A traveller's own requests, newest recorded first (the portal's "Your requests"): one
    query."""
    return list(
        PrivacyRequest.objects.filter(subject_id=subject_id)
        .select_related("duplicate_of")
        .order_by("-created_at", "-id")[:limit]
    )


def erased_rows_remaining(subject_id: str, erased_at: datetime) -> int:
    """Rows still holding the traveller's erased facts: facts written before the erasure, and
    history from before it that still shows a key in plain. Must be 0."""
    facts = MemoryFact.objects.filter(subject_id=subject_id, created_at__lte=erased_at).count()
    events = (
        FactEvent.objects.filter(subject_id=subject_id, created_at__lte=erased_at)
        .exclude(key="")
        .extra(where=["key <> key_hash"])  # noqa: S610 - a fixed expression, no input
        .count()
    )
    return facts + events


def subject_fact_count(subject_id: str) -> int:
    """How many facts the traveller has now (any state: held, expired, waiting for review)."""
    return MemoryFact.objects.filter(subject_id=subject_id).count()


def subject_known(subject_id: str) -> bool:
    """Whether the staff pages have a traveller page for this id (a subject row exists)."""
    return Subject.objects.filter(subject_id=subject_id).exists()


def receipt_outcomes(receipt: str, evidence: dict) -> dict[str, dict[str, object]]:
    """Each recipient of a "forget everything" receipt and where its acknowledgement stands, as
    evidence (`evidence["recipients"]`): the delivery log, else what the request kept, else the
    recipients that will be sent it (the outbox not dispatched yet), waiting."""
    found = {
        row["recipient"]: {
            "acknowledged": row["acknowledged"],
            "status": row["status"],
            "at": row["at"],
            "attempts": row["attempts"],
        }
        for row in receipt_deliveries(receipt)
    }
    if found:
        return found
    wanting = WebhookRecipient.objects.filter(
        active=True, events__contains=[WebhookEventType.SUBJECT_ERASED.value]
    ).values_list("name", flat=True)
    return {
        name: {"acknowledged": False, "status": "pending", "at": "", "attempts": 0}
        for name in wanting
    }


CORRECTIONS = (EventAction.UPDATED, EventAction.DELETED)


@dataclass(frozen=True)
class CorrectionShown:
    """What a rectification's evidence proves, in words: which fact, from which version to
    which; an erased fact only by its keyed hash (its key is gone)."""

    key: str  # "" once the fact is erased
    key_hash: str
    from_version: int | None
    to_version: int | None
    deleted: bool  # the correction was the fact's deletion


def correction_shown(subject_id: str, evidence: dict) -> CorrectionShown | None:
    """The history event a rectification's evidence names (its id, or the fact's keyed hash
    and the version it made): one query."""
    key_hash = str(evidence.get("key_hash") or "")
    if not key_hash:
        return None
    events = FactEvent.objects.filter(subject_id=subject_id, key_hash=key_hash)
    if evidence.get("correction_event"):
        events = events.filter(pk=evidence["correction_event"])
    elif evidence.get("version"):
        events = events.filter(after__version=evidence["version"])
    else:
        return CorrectionShown("", key_hash, None, None, False)
    event = events.order_by("created_at", "id").first()
    if event is None:
        return CorrectionShown("", key_hash, None, None, False)
    before, after = event.before or {}, event.after or {}
    return CorrectionShown(
        key="" if is_key_digest(event.key) else event.key,
        key_hash=key_hash,
        from_version=before.get("version"),
        to_version=after.get("version"),
        deleted=event.action == EventAction.DELETED,
    )


def correction_since(subject_id: str, since: datetime) -> FactEvent | None:
    """The latest correction of one of the traveller's facts by staff or the traveller since a
    rectification request was received (a change of value, or a deletion)."""
    return (
        FactEvent.objects.filter(
            subject_id=subject_id,
            action__in=CORRECTIONS,
            actor_kind__in=(ActorKind.STAFF, ActorKind.CUSTOMER),
            created_at__gte=since,
        )
        .order_by("-created_at", "-id")
        .first()
    )


def subject_paused(subject_id: str) -> dict[str, bool]:
    """The traveller's pauses that are on ({} when none)."""
    row = (
        Subject.objects.filter(subject_id=subject_id)
        .values("memory_paused", "memory_use_paused")
        .first()
        or {}
    )
    return {name: True for name, on in row.items() if on}


def recipients() -> list[WebhookRecipient]:
    return list(WebhookRecipient.objects.order_by("name"))


def failing_recipients() -> list[WebhookRecipient]:
    return list(WebhookRecipient.objects.filter(active=True, failing=True).order_by("name"))


def recent_deliveries(limit: int = 50) -> list[WebhookDelivery]:
    return list(
        WebhookDelivery.objects.select_related("event", "recipient").order_by("-id")[:limit]
    )


def delivery_get(delivery_id: int) -> WebhookDelivery | None:
    return (
        WebhookDelivery.objects.select_related("event", "recipient").filter(pk=delivery_id).first()
    )


def delivery_attempts(delivery: WebhookDelivery) -> list[DeliveryAttempt]:
    return list(delivery.attempt_log.order_by("id"))


def subject_outbox(subject_id: str) -> list[OutboxEvent]:
    return list(OutboxEvent.objects.filter(subject_id=subject_id).order_by("id"))


CSV_COLUMNS = (
    "number",
    "subject_id",
    "kind",
    "channel",
    "status",
    "received_on",
    "received_at",
    "due_on",
    "original_due_on",
    "extension_months",
    "extension_reason",
    "traveller_told_on",
    "ground",
    "handled_by",
    "closed_at",
    "evidence",
    "identity_check",
    "agent_relation",
    "duplicate_of",
)


def _cell(value: object) -> str:
    """A cell an auditor's spreadsheet will not run: a leading = + - @ is quoted away."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _moment(moment: datetime | None) -> str:
    """A moment in the airline's one zone, with its offset; "" when not known (a request
    entered as a day has no moment)."""
    return timezone.localtime(moment).isoformat(timespec="seconds") if moment else ""


def requests_csv(start: date, end: date) -> str:
    """Requests received from `start` to `end` (inclusive, the airline's days), for auditors."""
    rows = (
        PrivacyRequest.objects.select_related("handled_by", "duplicate_of")
        .filter(
            received_on__gte=start,
            received_on__lte=end,
        )
        .order_by("received_on", "created_at", "id")
    )
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        writer.writerow(
            [
                _cell(value)
                for value in (
                    row.number,
                    row.subject_id,
                    row.kind,
                    row.channel,
                    row.status,
                    row.received_on,
                    _moment(row.received_at),
                    row.due_on,
                    row.original_due_on,
                    row.extension_months,
                    row.extension_reason,
                    row.traveller_told_on,
                    row.ground,
                    row.handled_by.get_username() if row.handled_by else "",
                    _moment(row.closed_at),
                    ";".join(f"{k}={v}" for k, v in sorted(row.evidence.items())),
                    row.identity_check,
                    row.agent_relation,
                    row.duplicate_of.number if row.duplicate_of else "",
                )
            ]
        )
    return out.getvalue()


__all__ = [
    "CSV_COLUMNS",
    "RequestKind",
    "RequestStatus",
    "delivery_attempts",
    "delivery_get",
    "erased_rows_remaining",
    "erasure_request_for_receipt",
    "failing_recipients",
    "privacy_request_get",
    "privacy_requests",
    "privacy_requests_due_counts",
    "correction_since",
    "receipt_deliveries",
    "receipt_outcomes",
    "recent_deliveries",
    "recipients",
    "request_state",
    "request_steps",
    "requests_csv",
    "subject_fact_count",
    "subject_known",
    "subject_outbox",
    "subject_paused",
]


def fact_by_hash(subject_id: str, key_hash: str) -> MemoryFact | None:
    """The traveller's fact whose key has this keyed hash (a restriction request names its fact
    so, never by its key), or None once it is gone. A traveller's facts are few."""
    for fact in MemoryFact.objects.filter(subject_id=subject_id):
        if key_digest(subject_id, fact.key) == key_hash:
            return fact
    return None


def restriction_requests(subject_id: str, key_hash: str, *, working: bool = True) -> QuerySet:
    """The restriction requests about one fact (its keyed hash), open ones by default."""
    found = PrivacyRequest.objects.filter(
        subject_id=subject_id, kind=RequestKind.RESTRICTION, evidence__key_hash=key_hash
    )
    return found.filter(status__in=WORKING) if working else found
