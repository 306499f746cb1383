"""Every change to a privacy request: `privacy_request_<verb>`, keyword-only, one transaction,
each step written to the request's timeline and to the policy history with an explicit actor.

The flows that carry a request out with the existing tools (export, forget everything, correct,
pause, the legal hold) are in `flows.py`; they call these to record and close requests.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from memoryadmin.facts.actors import Actor
from memoryadmin.facts.validation import clean_reason

from . import clock, selectors
from .errors import MemoryRemains, RequestInvalid, RequestStateError
from .models import (
    NOT_CLOSED,
    WORKING,
    Channel,
    PrivacyRequest,
    RequestKind,
    RequestStatus,
    WebhookEventType,
)
from .outbox import outbox_write
from .requesters import (
    open_original,
    require_identity,
    split_off,
    who_is_asking,
)
from .steps import request_locked, request_number_new, staff_user, timeline_step


def privacy_request_receive(
    *,
    subject_id: str,
    kind: str,
    channel: str,
    actor: Actor,
    received_at: datetime | None = None,
    received_on: date | None = None,
    note: str = "",
    identity_check: str | None = None,
    identity_checked: str = "",
    agent_name: str = "",
    agent_relation: str = "",
    agent_authority: str = "",
    link_duplicate: bool = True,
) -> PrivacyRequest:
    """Inside a caller's transaction (the flows': no savepoint of its own): a request arrives,
    the portal's at a moment (`received_at`), staff recording a call, an e-mail or a letter on
    a day (`received_on`, and no made-up hour). One of the two.

    Staff say how the traveller's identity was verified ("unverified" is allowed and blocks the
    work until `privacy_request_identity_verify`) and who acted for them, if anyone; a portal
    request is verified by its link. While a request of the same kind for the same traveller is
    open, the new one is linked to it as a duplicate: no clock of its own (its due day is the
    original's), a step on the original's timeline, until `privacy_request_split`."""
    if (received_at is None) == (received_on is None):
        raise ValueError("Give the moment a request was received, or its day: one of the two.")
    if received_at is not None:
        received_on = clock.received_day(received_at)
    problems = {}
    subject_id = (subject_id or "").strip()
    if not subject_id or len(subject_id) > 128:
        problems["subject_id"] = "Enter the traveller's id (up to 128 characters)."
    if kind not in RequestKind.values:
        problems["kind"] = "Choose what the traveller asked for."
    if channel not in Channel.values:
        problems["channel"] = "Choose how the request arrived."
    if received_on > clock.today() or (
        received_at is not None and received_at > timezone.now() + timedelta(minutes=5)
    ):
        problems["received_on"] = "The received date cannot be in the future."
    who, who_problems = who_is_asking(
        channel, identity_check, identity_checked, agent_name, agent_relation, agent_authority
    )
    problems.update(who_problems)
    if problems:
        raise RequestInvalid("Check the request.", fields=problems)
    original = open_original(subject_id, kind) if link_duplicate else None
    due = original.due_on if original is not None else clock.due_on(received_on)
    request = PrivacyRequest.objects.create(
        number=request_number_new(),
        subject_id=subject_id,
        kind=kind,
        channel=channel,
        received_on=received_on,
        received_at=received_at,
        due_on=due,
        original_due_on=due,
        note=clean_reason(note),
        handled_by=staff_user(actor),
        duplicate_of=original,
        **who,
    )
    detail: dict[str, Any] = {"channel": channel, "due_on": due.isoformat()}
    if who["identity_check"]:
        detail["identity_check"] = who["identity_check"]
    if who["agent_name"]:
        detail["agent_relation"] = who["agent_relation"]
    if original is not None:
        detail["duplicate_of"] = original.number
    timeline_step(request, action="received", actor=actor, note=clean_reason(note), detail=detail)
    # Recorded in this transaction, which holds the traveller's and kind's lock to its end: no
    # request can have been linked to this one yet (`_answer_duplicates` need not look).
    request.recorded_now = True
    if original is not None:
        timeline_step(
            request,
            action="duplicate_linked",
            actor=actor,
            note=f"a duplicate of {original.number}: answered with it, no clock of its own",
            detail={"duplicate_of": original.number},
        )
        timeline_step(
            original,
            action="duplicate_received",
            actor=actor,
            note=f"a duplicate was received ({request.number}, {Channel(channel).label.lower()})",
            detail={"duplicate": request.number, "channel": channel},
        )
    return request


# The same, in a transaction of its own (staff's record form, the demo, tests).
privacy_request_record = transaction.atomic(privacy_request_receive)


def privacy_request_start(request: PrivacyRequest, *, actor: Actor) -> PrivacyRequest:
    """Inside a caller's transaction (which holds the request): work on it starts (an export
    handed over, an erasure carried out, a legal hold lifted), so an open or held request is in
    progress, with its "started" step in the timeline. One already in progress is left as it is."""
    if request.status not in (RequestStatus.OPEN, RequestStatus.ON_HOLD):
        return request
    request.status = RequestStatus.IN_PROGRESS
    request.handled_by = staff_user(actor) or request.handled_by
    request.save(update_fields=["status", "handled_by", "updated_at"])
    timeline_step(request, action="started", actor=actor)
    return request


def _complete(
    request: PrivacyRequest, *, actor: Actor, evidence: dict[str, Any], note: str = ""
) -> PrivacyRequest:
    request.status = RequestStatus.COMPLETED
    request.evidence = {**request.evidence, **evidence}
    request.closed_at = timezone.now()
    request.handled_by = staff_user(actor) or request.handled_by
    request.save(update_fields=["status", "evidence", "closed_at", "handled_by", "updated_at"])
    timeline_step(request, action="completed", actor=actor, note=note, detail=evidence)
    outbox_write(
        event_type=WebhookEventType.REQUEST_COMPLETED,
        subject_id=request.subject_id,
        receipt=str(evidence.get("receipt", "")),
        path=request.kind,
        request_number=request.number,
    )
    _answer_duplicates(request, actor=actor)
    return request


def _answer_duplicates(original: PrivacyRequest, *, actor: Actor) -> None:
    """The original is complete: each open duplicate is completed with it (the same answer,
    "answered with <number>"), except one whose identity is not verified, which is split off
    with its own clock so that it is neither answered unchecked nor left without a clock."""
    if getattr(original, "recorded_now", False):
        return
    duplicates = (
        PrivacyRequest.objects.select_for_update()
        .filter(duplicate_of=original, status__in=NOT_CLOSED)
        .order_by("created_at", "id")
    )
    for duplicate in duplicates:
        duplicate.duplicate_of = original
        if duplicate.identity_unverified:
            split_off(
                duplicate,
                actor=actor,
                reason=f"{original.number} was completed; this request's identity is not "
                "verified, so it is answered on its own",
            )
            continue
        _complete(
            duplicate,
            actor=actor,
            evidence={**original.evidence, "answered_with": original.number},
            note=f"completed with {original.number}, which it duplicates",
        )


@transaction.atomic
def privacy_request_complete(*, request_id: int, actor: Actor, note: str = "") -> PrivacyRequest:
    """Close a request as answered. The evidence is gathered here, never typed: an erasure
    closes only when no memory is left (rows remaining 0, its receipt, each recipient's
    acknowledgement), an access request with its file's SHA-256, a rectification with the
    correction event, a restriction or objection with the pause; a traveller we hold nothing
    about closes with "nothing held". A note alone never closes a request (it only explains);
    a request that will not be carried out is refused with its legal ground instead."""
    request = request_locked(request_id)
    if request.status not in WORKING:
        raise RequestStateError("Only an open request can be completed.")
    require_identity(request)
    evidence = completion_evidence(request)
    return _complete(request, actor=actor, evidence=evidence, note=clean_reason(note))


def completion_evidence(request: PrivacyRequest) -> dict[str, Any]:
    """The evidence that closes `request`, or `MemoryRemains` / `RequestInvalid` saying what is
    still to do. Reads only; `privacy_request_complete` records it."""
    subject_id = request.subject_id
    facts = selectors.subject_fact_count(subject_id)
    if request.kind == RequestKind.ERASURE:
        if facts:
            raise MemoryRemains(subject_id, facts)
        receipt = request.evidence.get("receipt", "")
        remaining = selectors.erased_rows_remaining(subject_id, timezone.now())
        if remaining:
            raise RequestStateError(
                f"{remaining} rows still hold this traveller's erased facts: "
                "erase again before completing."
            )
        if not receipt:
            return {"nothing_held": True, "rows_remaining": 0}
        return {
            "receipt": receipt,
            "rows_remaining": 0,
            "verified_at": timezone.now().isoformat(),
            "recipients": selectors.receipt_outcomes(receipt, request.evidence),
        }
    held = facts or selectors.erased_rows_remaining(subject_id, timezone.now())
    if request.kind == RequestKind.ACCESS:
        if request.evidence.get("sha256"):
            return {"sha256": request.evidence["sha256"]}
        if not held:
            return {"nothing_held": True}
        raise RequestInvalid(
            "Export the file first.",
            fields={"note": "Export the file for the traveller first: it closes with its hash."},
        )
    if request.kind == RequestKind.RECTIFICATION:
        event = selectors.correction_since(subject_id, request.received_from)
        if event is not None:
            return {"correction_event": event.pk, "key_hash": event.key_hash}
        if not held:
            return {"nothing_held": True}
        raise RequestInvalid(
            "Correct the fact first.",
            fields={
                "note": "Correct or delete the fact on the traveller's page first: the "
                "request closes with that correction."
            },
        )
    digest = request.evidence.get("key_hash", "")
    if request.kind == RequestKind.RESTRICTION and digest:  # one fact's use stopped
        fact = selectors.fact_by_hash(subject_id, digest)
        if fact is not None and fact.restricted_at is not None:
            raise RequestInvalid(
                "Resolve the restriction first.",
                fields={
                    "note": "Correct the value or confirm it on the fact's page first: the "
                    "request closes with that."
                },
            )
        return {"key_hash": digest, "outcome": "erased" if fact is None else "lifted"}
    paused = selectors.subject_paused(subject_id)
    if paused:
        return paused
    if not held:
        return {"nothing_held": True}
    raise RequestInvalid(
        "Pause first.",
        fields={
            "note": "Pause learning or use on the traveller's page first: the request closes "
            "with the pause. If it will not be carried out, refuse it with its legal ground."
        },
    )


@transaction.atomic
def privacy_request_refuse(*, request_id: int, actor: Actor, ground: str) -> PrivacyRequest:
    """Refuse a request: only with the legal ground the traveller will be told."""
    ground = clean_reason(ground)
    if not ground:
        raise RequestInvalid(
            "Give the legal ground.",
            fields={"ground": "Give the legal ground, e.g. 'Art. 12(5): manifestly unfounded'."},
        )
    request = request_locked(request_id)
    if request.status not in (*WORKING, RequestStatus.ON_HOLD):
        raise RequestStateError("Only an open request can be refused.")
    request.status = RequestStatus.REFUSED
    request.ground = ground
    request.closed_at = timezone.now()
    request.save(update_fields=["status", "ground", "closed_at", "updated_at"])
    timeline_step(request, action="refused", actor=actor, note=ground)
    # A refusal answers the request it was given for: each open duplicate is split off with
    # its own clock and answered on its own.
    for duplicate in PrivacyRequest.objects.select_for_update().filter(
        duplicate_of=request, status__in=NOT_CLOSED
    ):
        duplicate.duplicate_of = request
        split_off(
            duplicate,
            actor=actor,
            reason=f"{request.number} was refused; this request is answered on its own",
        )
    return request


@transaction.atomic
def privacy_request_extend(
    *, request_id: int, actor: Actor, months: int, reason: str, told_on: date | None
) -> PrivacyRequest:
    """Extend by one or two further months (Art. 12(3)): a reason and the day the traveller was
    told are required."""
    problems = {}
    reason = clean_reason(reason)
    if months not in (1, 2):
        problems["months"] = "Choose one or two further months."
    if not reason:
        problems["reason"] = "Say why the request needs longer (complexity or number of requests)."
    if told_on is None:
        problems["told_on"] = "Enter the day the traveller was told of the extension."
    elif told_on > clock.today():
        problems["told_on"] = "The day the traveller was told cannot be in the future."
    if problems:
        raise RequestInvalid("Check the extension.", fields=problems)
    request = request_locked(request_id)
    if request.status not in WORKING:
        raise RequestStateError("Only an open request can be extended.")
    if request.duplicate_of_id is not None:
        raise RequestStateError(
            "A duplicate has no clock of its own: extend the original, or split this one off."
        )
    if told_on > request.original_due_on:
        raise RequestInvalid(
            "Too late.", fields={"told_on": "The traveller must be told within the first month."}
        )
    request.extension_months = months
    request.extension_reason = reason
    request.traveller_told_on = told_on
    request.due_on = clock.due_on(request.received_on, extension_months=months)
    request.save(
        update_fields=[
            "extension_months",
            "extension_reason",
            "traveller_told_on",
            "due_on",
            "updated_at",
        ]
    )
    timeline_step(
        request,
        action="extended",
        actor=actor,
        note=reason,
        detail={
            "months": months,
            "due_on": request.due_on.isoformat(),
            "told_on": told_on.isoformat(),
        },
    )
    return request


@transaction.atomic
def privacy_request_reopen(*, request_id: int, actor: Actor, reason: str) -> PrivacyRequest:
    reason = clean_reason(reason)
    if not reason:
        raise RequestInvalid("Give a reason.", fields={"reason": "Say why it is reopened."})
    request = request_locked(request_id)
    if request.status not in (RequestStatus.COMPLETED, RequestStatus.REFUSED):
        raise RequestStateError("Only a closed request can be reopened.")
    request.status = RequestStatus.IN_PROGRESS
    request.closed_at = None
    request.save(update_fields=["status", "closed_at", "updated_at"])
    timeline_step(request, action="reopened", actor=actor, note=reason)
    return request


def privacy_request_hold(
    request: PrivacyRequest, *, actor: Actor, ground: str, reason: str = ""
) -> None:
    """Inside a caller's transaction: the request waits for a legal hold to lift. `reason` is
    what the person who asked for the erasure gave; the timeline shows it beside the ground."""
    request.status = RequestStatus.ON_HOLD
    request.ground = ground
    request.save(update_fields=["status", "ground", "updated_at"])
    reason = clean_reason(reason)
    note = f"Reason given: {reason}. Held: {ground}" if reason else ground
    timeline_step(request, action="on_hold", actor=actor, note=note)


def privacy_request_note(
    request: PrivacyRequest,
    *,
    action: str,
    actor: Actor,
    note: str = "",
    detail: dict[str, Any] | None = None,
) -> None:
    """Inside a caller's transaction: a step of the flows (exported, erased, verified...)."""
    timeline_step(request, action=action, actor=actor, note=note, detail=detail)


def privacy_request_finish(
    request: PrivacyRequest, *, actor: Actor, evidence: dict[str, Any], note: str = ""
) -> PrivacyRequest:
    """Inside a caller's transaction (which holds the request): close with the evidence."""
    return _complete(request, actor=actor, evidence=evidence, note=note)


def privacy_request_acknowledged(
    *, receipt: str, recipient: str, at: datetime, attempts: int
) -> None:
    """Inside the caller's transaction (the delivery's attempt): a recipient acknowledged a
    "forget everything" event, so the erasure request that has its receipt records it in its
    evidence and its timeline, open or already closed."""
    requests = PrivacyRequest.objects.select_for_update().filter(
        kind=RequestKind.ERASURE, evidence__receipt=receipt
    )
    for request in requests:
        kept = dict(request.evidence.get("recipients") or {})
        kept[recipient] = {
            "acknowledged": True,
            "status": "delivered",
            "at": at.isoformat(),
            "attempts": attempts,
        }
        request.evidence = {**request.evidence, "recipients": kept}
        request.save(update_fields=["evidence", "updated_at"])
        timeline_step(
            request,
            action="acknowledged",
            actor=Actor.system("webhooks"),
            note=f"{recipient} acknowledged the erasure",
            detail={"recipient": recipient},
        )
