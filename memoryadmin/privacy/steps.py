"""A privacy request's timeline: its number, each step (mirrored in the policy history with
its actor), and the row locked for a change. Shared by every module that changes requests."""

from __future__ import annotations

import secrets
from typing import Any

from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import PolicyAction
from memoryadmin.facts.services import policy_record

from .errors import RequestInvalid
from .models import PrivacyRequest, RequestStep

_NUMBER_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # read aloud on the phone: no 0/O, 1/I/L


def request_number_new() -> str:
    raw = "".join(secrets.choice(_NUMBER_ALPHABET) for _ in range(8))
    return f"PR-{raw[:4]}-{raw[4:]}"


def timeline_step(
    request: PrivacyRequest,
    *,
    action: str,
    actor: Actor,
    note: str = "",
    detail: dict[str, Any] | None = None,
) -> RequestStep:
    """One line of the timeline, and the same step in the policy history."""
    step = RequestStep.objects.create(
        request=request,
        action=action,
        actor_kind=str(actor.kind),
        actor_user=actor.user,
        actor_label=actor.label[:200],
        note=note[:1000],
        detail=detail,
    )
    policy_record(
        action=PolicyAction.PRIVACY_REQUEST,
        actor=actor,
        reason=note[:500],
        target=request.number,
        after={"step": action, "kind": request.kind, "status": request.status, **(detail or {})},
    )
    return step


def request_locked(request_id: int) -> PrivacyRequest:
    found = PrivacyRequest.objects.select_for_update().filter(pk=request_id).first()
    if found is None:
        raise RequestInvalid("No such request.")
    return found


def staff_user(actor: Actor) -> Any:
    return actor.user if actor.user is not None and actor.user.pk else None
