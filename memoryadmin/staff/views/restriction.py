"""Stopping the use of one fact while it is checked (GDPR Art. 18), on the staff side: an editor
stops it for a request received by phone, e-mail or letter, and resolves a restriction by
confirming the value with a note (use resumes). Correcting the value is the ordinary edit page:
a new value lifts the restriction. Each is confirmed with a reason on a page of its own; the
restriction request is completed with the outcome in the same transaction."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactInvalid, FactStateError
from memoryadmin.facts.topics import topic_label
from memoryadmin.http_methods import form_page
from memoryadmin.privacy import restriction as privacy_restriction
from memoryadmin.privacy.models import Channel

from ..forms import ReasonForm
from ..roles import EDITOR
from .actions import render_action
from .common import fact_or_404, next_url_or, staff_required, subject_or_404, traveller_url

RESTRICT = {
    "title": "Stop the agent using",
    "button": "Stop using it",
    "destructive": False,
    "explain": "For a traveller who asked by phone, e-mail or letter. The agent stops receiving "
    "this fact in every read, and its own saves and extraction leave the value alone; the value "
    "is kept as it is. A restriction request is opened with the legal clock. Resolve it by "
    "correcting the value, or by confirming it is right.",
}
CONFIRM = {
    "title": "Confirm and use again",
    "button": "Confirm: use it again",
    "destructive": False,
    "explain": "You checked the value and it is right. The agent uses it again, the restriction "
    "request is completed, and the traveller's requests page tells them (they can still delete "
    "it). Say what you checked: it goes in the fact's history and on the request's timeline. "
    "If the value is wrong, correct it on the edit page instead.",
}


def _page(request: HttpRequest, subject_id: str, key: str, spec: dict, act) -> HttpResponse:
    subject = subject_or_404(subject_id)
    fact = fact_or_404(subject_id, key)
    if request.method == "GET":
        return render_action(request, fact, subject, spec, ReasonForm())
    form = ReasonForm(request.POST)
    if not form.is_valid():
        return render_action(request, fact, subject, spec, form, status=400)
    try:
        done = act(fact, form.cleaned_data["reason"])
    except (FactStateError, FactInvalid) as exc:
        return render_action(request, fact, subject, spec, form, status=400, error=exc.message)
    messages.success(request, done)
    return redirect(next_url_or(request, traveller_url(subject_id, fact.key)))


@staff_required(EDITOR)
@form_page
def fact_restrict(request: HttpRequest, subject_id: str, key: str) -> HttpResponse:
    def act(fact, reason: str) -> str:
        made = privacy_restriction.privacy_restrict(
            subject_id=subject_id,
            key=fact.key,
            actor=Actor.staff(request.user),
            reason=reason,
            channel=Channel.PHONE,
        )
        return f"The agent no longer uses {topic_label(fact.key)}. Request {made.number} is open."

    return _page(request, subject_id, key, RESTRICT, act)


@staff_required(EDITOR)
@form_page
def fact_confirm(request: HttpRequest, subject_id: str, key: str) -> HttpResponse:
    def act(fact, reason: str) -> str:
        services.fact_unrestrict(
            subject_id=subject_id,
            key=fact.key,
            actor=Actor.staff(request.user),
            reason=reason,
            outcome="confirmed",
        )
        return f"Confirmed {topic_label(fact.key)}. The agent uses it again."

    return _page(request, subject_id, key, CONFIRM, act)
