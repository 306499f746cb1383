"""Stopping the use of one fact while it is checked (GDPR Art. 18(1)(a)), as a privacy request.

Restricting opens a `restriction` request with the legal clock, linked to the fact through the
keyed hash of its key in the request's evidence (never the key, the value or the traveller's
note: those stay on the fact, which erasure removes). Resuming the use, however it happens
(staff correct the value, staff confirm it, the traveller lifts it), completes the request in
the same transaction with its outcome: a `facts.corrections` restriction listener, so that
every path that lifts a restriction closes its request.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from memoryadmin.facts import services as fact_services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.corrections import RestrictionChanged
from memoryadmin.facts.erasure import key_digest

from . import selectors
from .models import Channel, PrivacyRequest, RequestKind
from .services import (
    privacy_request_finish,
    privacy_request_note,
    privacy_request_receive,
    privacy_request_start,
)

# What the timeline says for each way the use resumed.
OUTCOME_NOTES = {
    "corrected": "the value was corrected: the assistant uses the new value",
    "confirmed": "checked and confirmed: the assistant uses it again",
    "lifted": "the traveller lifted the restriction",
    "erased": "the fact was deleted",
}


@transaction.atomic
def privacy_restrict(
    *,
    subject_id: str,
    key: str,
    actor: Actor,
    reason: str,
    note: str = "",
    channel: str = Channel.PORTAL,
) -> PrivacyRequest:
    """Stop the use of one fact and open its `restriction` request, in one transaction: the
    traveller in the portal (`note`: what they say is wrong), or staff for a request that came
    by phone, e-mail or letter (`reason`, required of staff)."""
    fact = fact_services.fact_restrict(
        subject_id=subject_id, key=key, actor=actor, reason=reason, note=note
    )
    digest = key_digest(subject_id, fact.key)
    request = privacy_request_receive(
        subject_id=subject_id,
        kind=RequestKind.RESTRICTION,
        channel=channel,
        received_at=timezone.now(),
        actor=actor,
        note=(
            "use of one fact stopped in the privacy portal while it is checked"
            if channel == Channel.PORTAL
            else reason
        ),
        link_duplicate=False,  # one fact's restriction is about that fact, never a duplicate
    )
    request.evidence = {"key_hash": digest, "restricted_at": fact.restricted_at.isoformat()}
    request.save(update_fields=["evidence", "updated_at"])
    privacy_request_start(request, actor=actor)
    privacy_request_note(
        request,
        action="restricted",
        actor=actor,
        note="the assistant no longer uses this fact while it is checked",
        detail={"key_hash": digest},
    )
    return request


def _close(subject_id: str, digest: str, *, actor: Actor, outcome: str) -> None:
    for request in selectors.restriction_requests(subject_id, digest).select_for_update():
        note = OUTCOME_NOTES.get(outcome, outcome)
        privacy_request_note(
            request,
            action="restriction_lifted",
            actor=actor,
            note=note,
            detail={"key_hash": digest, "outcome": outcome},
        )
        privacy_request_finish(
            request,
            actor=actor,
            evidence={
                "key_hash": digest,
                "outcome": outcome,
                "lifted_at": timezone.now().isoformat(),
            },
            note=note,
        )


def restriction_resolved(change: RestrictionChanged) -> None:
    """A restriction listener: when a fact's use resumes, complete its open restriction
    requests with the outcome, in the same transaction."""
    if change.restricted:
        return
    digest = key_digest(change.subject_id, change.key)
    _close(change.subject_id, digest, actor=change.actor, outcome=change.outcome)


@transaction.atomic
def privacy_fact_delete(*, subject_id: str, key: str, actor: Actor, reason: str) -> None:
    """Delete one fact (the portal's "Delete this"); a restriction request about it is
    answered by the deletion and completes with the outcome "erased", in the same
    transaction."""
    fact_services.fact_delete(subject_id=subject_id, key=key, actor=actor, reason=reason)
    _close(subject_id, key_digest(subject_id, key), actor=actor, outcome="erased")
