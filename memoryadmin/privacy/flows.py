"""Requests carried out with the tools that exist, recorded as they happen: a download is an
access request, "forget everything" an erasure request (on hold under a legal hold, carried out
when the hold lifts), a correction a rectification, a pause a restriction. Each flow is one
transaction: the change, the request and its events commit together or not at all."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from memoryadmin.facts import services as fact_services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.erasure import key_digest
from memoryadmin.facts.models import Subject
from memoryadmin.facts.selectors import ClearReceipt

from . import selectors
from .errors import RequestInvalid, RequestStateError
from .models import WORKING, Channel, PrivacyRequest, RequestKind, RequestStatus
from .outbox import outbox_stamp_corrected, outbox_stamp_subject_erased
from .requesters import UNVERIFIED_MESSAGE
from .services import (
    privacy_request_finish,
    privacy_request_hold,
    privacy_request_note,
    privacy_request_receive,
    privacy_request_start,
)

HOLD_GROUND = "GDPR Art. 17(3)(e): kept for the establishment, exercise or defence of legal claims"
_PATHS = {"customer": "traveller"}


def _path(actor: Actor) -> str:
    return _PATHS.get(str(actor.kind), str(actor.kind))


def _own_request(request_id: int, subject_id: str, kind: str) -> PrivacyRequest:
    request = PrivacyRequest.objects.select_for_update().filter(pk=request_id).first()
    if request is None or request.subject_id != subject_id or request.kind != kind:
        raise RequestInvalid("This request is not for this traveller or this kind of request.")
    if request.status not in WORKING:
        raise RequestStateError("This request is closed.")
    if request.identity_unverified:  # nothing is exported, erased or corrected for an unknown
        raise RequestStateError(UNVERIFIED_MESSAGE)
    return request


def _portal_request(subject_id: str, kind: str, actor: Actor, note: str) -> PrivacyRequest:
    return privacy_request_receive(
        subject_id=subject_id,
        kind=kind,
        channel=Channel.PORTAL,
        received_at=timezone.now(),
        actor=actor,
        note=note,
    )


@transaction.atomic
def privacy_export_record(
    *, subject_id: str, sha256: str, actor: Actor, request_id: int | None = None
) -> PrivacyRequest:
    """A download was handed over. The traveller's own download closes its access request with
    the file's SHA-256 at once; staff's export attaches it, and staff close the request once
    the file is sent (`privacy_request_complete`)."""
    if request_id is None:
        request = _portal_request(
            subject_id, RequestKind.ACCESS, actor, "downloaded in the privacy portal"
        )
        return privacy_request_finish(
            request, actor=actor, evidence={"sha256": sha256}, note="export handed to the traveller"
        )
    request = privacy_request_start(
        _own_request(request_id, subject_id, RequestKind.ACCESS), actor=actor
    )
    request.evidence = {**request.evidence, "sha256": sha256}
    request.save(update_fields=["evidence", "updated_at"])
    privacy_request_note(request, action="exported", actor=actor, detail={"sha256": sha256})
    return request


@dataclass(frozen=True)
class ForgetOutcome:
    request: PrivacyRequest
    receipt: ClearReceipt | None  # None: on hold, nothing erased


def _erase(request: PrivacyRequest, *, actor: Actor, reason: str) -> ClearReceipt:
    privacy_request_start(request, actor=actor)
    receipt = fact_services.subject_forget(
        subject_id=request.subject_id, actor=actor, reason=reason
    )
    outbox_stamp_subject_erased(
        subject_id=request.subject_id, receipt=receipt.number, path=_path(actor)
    )
    privacy_request_note(
        request,
        action="erased",
        actor=actor,
        note=reason,
        detail={"receipt": receipt.number, "facts_erased": receipt.facts_erased},
    )
    request.evidence = {
        **request.evidence,
        "receipt": receipt.number,
        "facts_erased": receipt.facts_erased,
        "erased_at": receipt.cleared_at.isoformat(),
    }
    request.save(update_fields=["evidence", "updated_at"])
    return receipt


@transaction.atomic
def privacy_forget(
    *, subject_id: str, actor: Actor, reason: str, request_id: int | None = None
) -> ForgetOutcome:
    """Forget everything as an erasure request. Under a legal hold nothing is erased: the
    request goes on hold with its ground, and `privacy_legal_hold_set` carries it out later.
    Call `privacy_verify_erasure` after this commits."""
    subject = Subject.objects.select_for_update().filter(subject_id=subject_id).first()
    if request_id is None:
        request = _portal_request(
            subject_id, RequestKind.ERASURE, actor, "'forget everything' in the privacy portal"
        )
    else:
        request = _own_request(request_id, subject_id, RequestKind.ERASURE)
    if subject is not None and subject.legal_hold:
        privacy_request_hold(request, actor=actor, ground=HOLD_GROUND, reason=reason)
        return ForgetOutcome(request, None)
    return ForgetOutcome(request, _erase(request, actor=actor, reason=reason))


@transaction.atomic
def privacy_verify_erasure(*, request_id: int, actor: Actor) -> PrivacyRequest:
    """After the erasure committed: count the rows still holding the traveller's erased facts
    (facts and history from before the erasure). 0 closes the request; anything else keeps it
    open with the count in its timeline."""
    request = PrivacyRequest.objects.select_for_update().get(pk=request_id)
    if request.status != RequestStatus.IN_PROGRESS or "receipt" not in request.evidence:
        return request
    erased_at = datetime.fromisoformat(request.evidence["erased_at"])
    remaining = selectors.erased_rows_remaining(request.subject_id, erased_at)
    if remaining:
        privacy_request_note(
            request, action="verification_failed", actor=actor, detail={"rows_remaining": remaining}
        )
        return request
    return privacy_request_finish(
        request,
        actor=actor,
        evidence={
            "receipt": request.evidence["receipt"],
            "rows_remaining": 0,
            "verified_at": timezone.now().isoformat(),
            "recipients": selectors.receipt_outcomes(request.evidence["receipt"], request.evidence),
        },
        note="erased and verified: no row holds the erased facts",
    )


@transaction.atomic
def privacy_correct(
    *,
    subject_id: str,
    key: str,
    value: str,
    expected_version: int | None,
    actor: Actor,
    reason: str,
    request_id: int | None = None,
) -> PrivacyRequest:
    """A correction as a rectification request. `fact_edit` writes the `memory.fact.corrected`
    event (the key's keyed hash, never the key or the value); it carries the request's number."""
    fact = fact_services.fact_edit(
        subject_id=subject_id,
        key=key,
        value=value,
        expected_version=expected_version,
        actor=actor,
        reason=reason,
    )
    if request_id is None:
        request = _portal_request(
            subject_id, RequestKind.RECTIFICATION, actor, "corrected in the privacy portal"
        )
    else:
        request = _own_request(request_id, subject_id, RequestKind.RECTIFICATION)
    digest = key_digest(subject_id, fact.key)
    # `fact_edit` wrote the `memory.fact.corrected` event (if the value changed): name the
    # request it answers.
    outbox_stamp_corrected(subject_id=subject_id, key_hash=digest, request_number=request.number)
    return privacy_request_finish(
        request,
        actor=actor,
        evidence={"key_hash": digest, "version": fact.version},
        note="fact corrected",
    )


@transaction.atomic
def privacy_pause(
    *, subject_id: str, memory_paused: bool, memory_use_paused: bool, actor: Actor, reason: str
) -> tuple[Subject, PrivacyRequest | None]:
    """The traveller's switches; turning one off is a restriction request, closed at once."""
    before = (
        Subject.objects.filter(subject_id=subject_id)
        .values("memory_paused", "memory_use_paused")
        .first()
        or {}
    )
    subject = fact_services.subject_set_preferences(
        subject_id=subject_id,
        memory_paused=memory_paused,
        memory_use_paused=memory_use_paused,
        actor=actor,
        reason=reason,
    )
    newly = [
        name
        for name in ("memory_paused", "memory_use_paused")
        if getattr(subject, name) and not before.get(name, False)
    ]
    if not newly:
        return subject, None
    request = _portal_request(
        subject_id, RequestKind.RESTRICTION, actor, "paused in the privacy portal"
    )
    evidence: dict[str, Any] = {name: True for name in newly}
    return subject, privacy_request_finish(request, actor=actor, evidence=evidence, note="paused")


@transaction.atomic
def privacy_legal_hold_set(
    *, subject_id: str, hold: bool, actor: Actor, reason: str
) -> list[PrivacyRequest]:
    """Place or lift a legal hold; lifting it carries out the erasure requests that waited for
    it, in the same transaction. Returns them (verify each after commit)."""
    fact_services.subject_set_legal_hold(
        subject_id=subject_id, hold=hold, actor=actor, reason=reason
    )
    if hold:
        return []
    waiting = list(
        PrivacyRequest.objects.select_for_update()
        .filter(subject_id=subject_id, kind=RequestKind.ERASURE, status=RequestStatus.ON_HOLD)
        .order_by("created_at", "id")
    )
    for request in waiting:
        privacy_request_note(request, action="hold_lifted", actor=actor, note=reason)
    if waiting:
        _erase(waiting[0], actor=actor, reason="carried out when the legal hold was lifted")
        for later in waiting[1:]:  # one erasure answers them all
            privacy_request_start(later, actor=actor)
            later.evidence = dict(waiting[0].evidence)
            later.save(update_fields=["evidence", "updated_at"])
    return waiting
