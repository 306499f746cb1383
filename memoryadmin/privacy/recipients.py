"""Webhook recipients (privacy admins register them) and replays. Each change is in the policy
history; the signing secret is returned once and stored only encrypted."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction

from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import PolicyAction
from memoryadmin.facts.services import policy_record
from memoryadmin.facts.validation import clean_reason

from . import webhooks
from .errors import RequestInvalid
from .models import DeliveryAttempt, WebhookDelivery, WebhookEventType, WebhookRecipient
from .signing_secrets import new_secret, seal

ALL_EVENTS = tuple(WebhookEventType.values)


def url_problem(url: str) -> str:
    """Why a URL cannot be a recipient's, or ""; http:// only with DEBUG on."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "Enter a full address, e.g. https://crm.example.com/hooks/memory."
    if parts.scheme == "http" and not settings.DEBUG:
        return "Use an https:// address (http:// is only for development, with DEBUG on)."
    if parts.scheme not in ("https", "http") or not parts.hostname:
        return "Enter a full address, e.g. https://crm.example.com/hooks/memory."
    if parts.username or parts.password:
        return "Leave the user name and password out of the address."
    if len(url) > 500:
        return "Use an address of at most 500 characters."
    return ""


@transaction.atomic
def webhook_recipient_add(
    *,
    name: str,
    url: str,
    events: list[str] | None,
    actor: Actor,
    reason: str = "",
    traveller_name_en: str = "",
    traveller_name_zh_hant: str = "",
) -> tuple[WebhookRecipient, str]:
    """Register a recipient; returns it and its signing secret (shown once, never again).
    The traveller names are what a traveller's receipt calls it, in each portal language."""
    name = (name or "").strip()
    url = (url or "").strip()
    traveller_names = {
        "traveller_name_en": (traveller_name_en or "").strip(),
        "traveller_name_zh_hant": (traveller_name_zh_hant or "").strip(),
    }
    chosen = sorted(set(events or ALL_EVENTS))
    problems = {}
    if not name or len(name) > 100:
        problems["name"] = "Give the system a name of up to 100 characters, e.g. 'CRM'."
    elif WebhookRecipient.objects.filter(name=name).exists():
        problems["name"] = "A recipient with this name exists already."
    if problem := url_problem(url):
        problems["url"] = problem
    for field, value in traveller_names.items():
        if len(value) > 100:
            problems[field] = "Use at most 100 characters."
    unknown = [event for event in chosen if event not in ALL_EVENTS]
    if unknown or not chosen:
        problems["events"] = "Choose events from: " + ", ".join(ALL_EVENTS) + "."
    if problems:
        raise RequestInvalid("Check the recipient.", fields=problems)
    secret = new_secret()
    recipient = WebhookRecipient.objects.create(
        name=name, url=url, events=chosen, secret_encrypted=seal(secret), **traveller_names
    )
    policy_record(
        action=PolicyAction.WEBHOOK_RECIPIENT,
        actor=actor,
        reason=clean_reason(reason),
        target=name,
        after={"added": True, "url": url, "events": chosen, **traveller_names},
    )
    return recipient, secret


@transaction.atomic
def webhook_recipient_remove(*, recipient_id: int, actor: Actor, reason: str) -> None:
    reason = clean_reason(reason)
    if not reason:
        raise RequestInvalid("Give a reason.", fields={"reason": "Say why it is removed."})
    recipient = WebhookRecipient.objects.select_for_update().filter(pk=recipient_id).first()
    if recipient is None or not recipient.active:
        return
    recipient.active = False
    recipient.save(update_fields=["active"])
    policy_record(
        action=PolicyAction.WEBHOOK_RECIPIENT,
        actor=actor,
        reason=reason,
        target=recipient.name,
        before={"active": True},
        after={"active": False},
    )


def webhook_delivery_replay(*, delivery_id: int, actor: Actor) -> DeliveryAttempt | None:
    """Send one delivery again now, whatever its status; the attempt is logged as a replay and
    the replay is in the policy history. Returns the attempt (None: no such delivery, or its
    recipient was removed: nothing is sent to a system no longer registered)."""
    delivery = WebhookDelivery.objects.select_related("recipient").filter(pk=delivery_id).first()
    if delivery is None or not delivery.recipient.active:
        return None
    with transaction.atomic():
        policy_record(
            action=PolicyAction.WEBHOOK_REPLAYED,
            actor=actor,
            reason="",
            target=delivery.recipient.name,
            after={"delivery": delivery.pk},
        )
    webhooks.delivery_attempt(delivery_id=delivery_id, replay=True)
    return DeliveryAttempt.objects.filter(delivery_id=delivery_id).order_by("-id").first()
