"""Webhook recipients, for privacy admins (linked from the settings pages): register one (its
signing secret is shown once), see recent deliveries with each attempt, replay a delivery."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from memoryadmin.facts.actors import Actor
from memoryadmin.http_methods import form_page, read_only
from memoryadmin.privacy import selectors
from memoryadmin.privacy.errors import RequestInvalid
from memoryadmin.privacy.recipients import webhook_delivery_replay, webhook_recipient_add

from ..roles import PRIVACY_ADMIN
from ..templatetags.privacy_words import answer_words
from ..views.common import staff_required
from .forms import RecipientForm

admin_required = staff_required(PRIVACY_ADMIN)
NEW_SECRET_SESSION_KEY = "privacy.new_webhook_secret"


@admin_required
@form_page
def recipients(request: HttpRequest) -> HttpResponse:
    form = RecipientForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            recipient, secret = webhook_recipient_add(
                name=data["name"],
                url=data["url"],
                events=data["events"],
                actor=Actor.staff(request.user),
                reason=data["reason"],
                traveller_name_en=data["traveller_name_en"],
                traveller_name_zh_hant=data["traveller_name_zh_hant"],
            )
        except RequestInvalid as error:
            for name, message in error.fields.items():
                form.add_error(name if name in form.fields else None, message)
        else:
            # Shown once on the next page, then gone from the session.
            request.session[NEW_SECRET_SESSION_KEY] = {"id": recipient.pk, "secret": secret}
            return redirect("privacy:webhook_created", recipient_id=recipient.pk)
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "staff/privacy/webhooks.html",
        {
            "form": form,
            "recipients": selectors.recipients(),
            "deliveries": selectors.recent_deliveries(),
            "section": "webhooks",
        },
        status=status,
    )


@admin_required
@read_only
def recipient_created(request: HttpRequest, recipient_id: int) -> HttpResponse:
    shown = request.session.pop(NEW_SECRET_SESSION_KEY, None)
    if not shown or shown.get("id") != recipient_id:
        messages.info(request, "The signing secret is only shown once, right after it is made.")
        return redirect("privacy:webhooks")
    recipient = next((r for r in selectors.recipients() if r.pk == recipient_id), None)
    return render(
        request,
        "staff/privacy/webhook_created.html",
        {"recipient": recipient, "secret": shown["secret"], "section": "webhooks"},
    )


@admin_required
@form_page
def delivery(request: HttpRequest, delivery_id: int) -> HttpResponse:
    found = selectors.delivery_get(delivery_id)
    if found is None:
        raise Http404("No such delivery.")
    if request.method == "POST":
        attempt = webhook_delivery_replay(delivery_id=delivery_id, actor=Actor.staff(request.user))
        if attempt is None:
            messages.error(request, f"Not replayed: {found.recipient.name} was removed.")
        elif attempt.ok:
            messages.success(
                request, f"Replayed: {found.recipient.name} answered {attempt.status_code}."
            )
        else:
            messages.error(
                request,
                f"Replayed: {found.recipient.name} did not acknowledge "
                f"({answer_words(attempt).lower()}).",
            )
        return redirect("privacy:delivery", delivery_id=delivery_id)
    return render(
        request,
        "staff/privacy/delivery.html",
        {
            "delivery": found,
            "attempts": selectors.delivery_attempts(found),
            "section": "webhooks",
        },
    )
