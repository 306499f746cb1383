"""Who is asking, and whether they asked already: the identity check and the authority of
someone acting for the traveller on a new request, the check recorded later, and a request that
repeats an open one of its kind (linked to it without a clock of its own, or split off)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection, transaction

from memoryadmin.facts.actors import Actor
from memoryadmin.facts.validation import clean_reason

from . import clock
from .errors import RequestInvalid, RequestStateError
from .models import NOT_CLOSED, AgentRelation, Channel, IdentityCheck, PrivacyRequest
from .sql import SQL_REQUEST_LOCK
from .steps import request_locked, timeline_step

UNVERIFIED_MESSAGE = (
    "The traveller's identity is not verified: record how it was checked before this request "
    "is worked or completed."
)


def identity_problems(
    identity_check: str, identity_checked: str, allowed: Iterable[str]
) -> dict[str, str]:
    """What is wrong with an identity check as staff give it: a method among `allowed`, and
    what was checked when it was checked by phone or in person."""
    if identity_check not in allowed:
        return {"identity_check": "Choose how the traveller's identity was verified."}
    if identity_check == IdentityCheck.CHECKED and not identity_checked:
        return {
            "identity_checked": "Say what was checked, e.g. booking reference and date of birth."
        }
    return {}


def who_is_asking(
    channel: str,
    identity_check: str | None,
    identity_checked: str,
    agent_name: str,
    agent_relation: str,
    agent_authority: str,
) -> tuple[dict[str, str], dict[str, str]]:
    """The identity and authority fields of a new request, cleaned, and the problems found."""
    problems: dict[str, str] = {}
    identity_checked = clean_reason(identity_checked)
    if channel == Channel.PORTAL:
        identity_check = IdentityCheck.PORTAL_LINK  # the traveller opened their own link
    elif identity_check is None:
        identity_check = ""  # a caller that does not ask (tests, older tools): not recorded
    else:
        problems = identity_problems(identity_check, identity_checked, IdentityCheck.values)
    if identity_check != IdentityCheck.CHECKED:
        identity_checked = ""
    agent = {
        "agent_name": clean_reason(agent_name)[:200],
        "agent_relation": (agent_relation or "").strip(),
        "agent_authority": clean_reason(agent_authority),
    }
    if any(agent.values()):
        if channel == Channel.PORTAL:
            problems["agent_name"] = "A request made in the portal is the traveller's own."
        if not agent["agent_name"]:
            problems["agent_name"] = "Enter the name of the person acting for the traveller."
        if agent["agent_relation"] not in AgentRelation.values:
            problems["agent_relation"] = "Choose their relation to the traveller."
        if not agent["agent_authority"]:
            problems["agent_authority"] = (
                "Say what evidence of their authority was seen, e.g. a signed letter of authority."
            )
    return {
        "identity_check": identity_check,
        "identity_checked": identity_checked,
        **agent,
    }, problems


def open_original(subject_id: str, kind: str) -> PrivacyRequest | None:
    """The open request of this kind for this traveller that a new one repeats: the oldest not
    closed and not itself a duplicate (a one-fact restriction is about its fact: never).
    Holds the traveller's and kind's lock to the end of the transaction (`SQL_REQUEST_LOCK`)."""
    with connection.cursor() as cursor:
        cursor.execute(SQL_REQUEST_LOCK, [f"{subject_id}\x1f{kind}"])
    return (
        PrivacyRequest.objects.select_for_update()
        .filter(subject_id=subject_id, kind=kind, status__in=NOT_CLOSED, duplicate_of=None)
        .exclude(evidence__has_key="key_hash")
        .order_by("created_at", "id")
        .first()
    )


def require_identity(request: PrivacyRequest) -> None:
    if request.identity_unverified:
        raise RequestStateError(UNVERIFIED_MESSAGE)


@transaction.atomic
def privacy_request_identity_verify(
    *, request_id: int, actor: Actor, identity_check: str, identity_checked: str = ""
) -> PrivacyRequest:
    """Record how a "not yet verified" traveller's identity was checked, so that the request
    can be worked and completed: the method, what was checked, and who, in its timeline."""
    identity_checked = clean_reason(identity_checked)
    allowed = (IdentityCheck.PORTAL_LINK, IdentityCheck.AIRLINE_ACCOUNT, IdentityCheck.CHECKED)
    problems = identity_problems(identity_check, identity_checked, allowed)
    if problems:
        raise RequestInvalid("Check the identity.", fields=problems)
    request = request_locked(request_id)
    if not request.identity_unverified:
        raise RequestStateError("This request's identity check is already recorded.")
    if request.status not in NOT_CLOSED:
        raise RequestStateError("This request is closed.")
    request.identity_check = identity_check
    request.identity_checked = identity_checked if identity_check == IdentityCheck.CHECKED else ""
    request.save(update_fields=["identity_check", "identity_checked", "updated_at"])
    timeline_step(
        request,
        action="identity_verified",
        actor=actor,
        note=f"{IdentityCheck(identity_check).label}"
        + (f": {request.identity_checked}" if request.identity_checked else ""),
        detail={"identity_check": identity_check},
    )
    return request


def split_off(request: PrivacyRequest, *, actor: Actor, reason: str) -> PrivacyRequest:
    original = request.duplicate_of
    due = clock.due_on(request.received_on)
    request.duplicate_of = None
    request.due_on = due
    request.original_due_on = due
    request.extension_months = 0
    request.save(
        update_fields=[
            "duplicate_of",
            "due_on",
            "original_due_on",
            "extension_months",
            "updated_at",
        ]
    )
    timeline_step(
        request,
        action="split",
        actor=actor,
        note=reason,
        detail={"from": original.number, "due_on": due.isoformat()},
    )
    timeline_step(
        original,
        action="duplicate_split",
        actor=actor,
        note=f"{request.number} split off: {reason}",
        detail={"duplicate": request.number},
    )
    return request


@transaction.atomic
def privacy_request_split(*, request_id: int, actor: Actor, reason: str) -> PrivacyRequest:
    """Treat a duplicate as a request of its own, with a reason: it gets its own clock, one
    calendar month from the day it was received."""
    reason = clean_reason(reason)
    if not reason:
        raise RequestInvalid(
            "Give a reason.",
            fields={"reason": "Say why it is a request of its own, e.g. it asks for more."},
        )
    request = request_locked(request_id)
    if request.duplicate_of_id is None:
        raise RequestStateError("Only a duplicate can be split off.")
    if request.status not in NOT_CLOSED:
        raise RequestStateError("This request is closed.")
    return split_off(request, actor=actor, reason=reason)
