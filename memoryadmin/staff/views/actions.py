"""The one-step actions on a fact: a reason, a confirmation, the service, a redirect."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from memoryadmin.access.choices import AccessKind
from memoryadmin.facts import selectors as fact_selectors
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactConflict, FactStateError
from memoryadmin.facts.models import MemoryFact
from memoryadmin.facts.topics import topic_label
from memoryadmin.http_methods import form_page

from ..forms import ReasonForm
from ..roles import EDITOR
from ..templatetags.staff_time import day
from .common import (
    fact_or_404,
    next_url_or,
    record_access,
    remember_reveal,
    revealed_keys,
    staff_required,
    subject_or_404,
    traveller_url,
)

# action -> (title, button, service, message after, destructive)
SIMPLE_ACTIONS: dict[str, dict[str, Any]] = {
    "expire": {
        "title": "Expire",
        "button": "Expire now",
        "service": services.fact_expire,
        "done": "Expired {key}. The agent no longer sees it.",
        "destructive": True,
        "explain": "The agent stops seeing this fact now; the retention sweep deletes it later.",
    },
    "flag": {
        "title": "Flag as sensitive",
        "button": "Flag sensitive",
        "service": services.fact_flag_sensitive,
        "done": "Flagged {key} as sensitive. It is masked for viewers and never in tier one.",
        "destructive": False,
        "explain": "Sensitive facts are masked for viewers, never injected in every turn, and "
        "recalled only when the agent asks for them.",
    },
    "unflag": {
        "title": "Remove the sensitive flag",
        "button": "Remove flag",
        "service": services.fact_unflag_sensitive,
        "done": "{key} is no longer marked sensitive.",
        "destructive": False,
        "explain": "The value will be shown to viewers and may be injected in every turn.",
    },
    "approve": {
        "title": "Approve",
        "button": "Approve",
        "service": services.fact_approve,
        "done": "Approved {key}. The agent can use it now.",
        "destructive": False,
        "explain": "The agent may use this fact from now on.",
    },
    "reject": {
        "title": "Reject",
        "button": "Reject and erase",
        "service": services.fact_reject,
        "done": "Rejected {key}. It is erased.",
        "destructive": True,
        "explain": "The fact is erased; the history keeps only who rejected it and why.",
    },
    "delete": {
        "title": "Delete",
        "button": "Delete for good",
        "service": services.fact_delete,
        "done": "Deleted {key}. Its value is erased from the history too.",
        "destructive": True,
        "explain": "The fact is erased, and its old values are erased from the history. "
        "This cannot be undone.",
    },
}


def render_action(
    request, fact, subject, spec, form, status=200, error: str = "", next_url: str = ""
):
    return render(
        request,
        "staff/fact_action.html",
        {
            "fact": fact,
            "subject": subject,
            "spec": spec,
            "form": form,
            "error": error,
            "masked": fact.sensitive and fact.key not in revealed_keys(request, fact.subject_id),
            "next": next_url or next_url_or(request, ""),
            "sooner": fact_selectors.expiry_if_flagged_sensitive(fact)
            if spec.get("service") is services.fact_flag_sensitive
            else None,
        },
        status=status,
    )


def apply_action(request: HttpRequest, spec: dict[str, Any], fact: MemoryFact, data: dict) -> None:
    """Run the action's service as the signed-in user, at the version the form was loaded at."""
    spec["service"](
        subject_id=fact.subject_id,
        key=fact.key,
        actor=Actor.staff(request.user),
        reason=data["reason"],
        expected_version=data["version"],
    )


@staff_required(EDITOR)
@form_page
def fact_action(request: HttpRequest, subject_id: str, key: str, action: str) -> HttpResponse:
    spec = SIMPLE_ACTIONS.get(action)
    if spec is None:
        raise Http404("No such action.")
    subject = subject_or_404(subject_id)
    fact = fact_or_404(subject_id, key)
    if request.method == "GET":
        form = ReasonForm(initial={"version": fact.version})
        return render_action(request, fact, subject, spec, form)
    form = ReasonForm(request.POST)
    if not form.is_valid():
        return render_action(request, fact, subject, spec, form, status=400)
    try:
        apply_action(request, spec, fact, form.cleaned_data)
    except FactConflict:
        fresh = fact_selectors.subject_fact(subject_id, key) or fact
        form = ReasonForm(initial={"version": fresh.version, "reason": form.cleaned_data["reason"]})
        error = "Someone changed this fact since you opened the page. Check it and confirm again."
        return render_action(request, fresh, subject, spec, form, status=409, error=error)
    except FactStateError as exc:
        return render_action(request, fact, subject, spec, form, status=400, error=exc.message)
    done = spec["done"].format(key=topic_label(fact.key))
    if action == "flag":
        flagged = fact_selectors.subject_fact(subject_id, key)
        if (
            flagged is not None
            and flagged.expires_at is not None
            and (fact.expires_at is None or flagged.expires_at < fact.expires_at)
        ):
            done += f" It will now be deleted on {day(flagged.expires_at)}."
    messages.success(request, done)
    default = traveller_url(subject_id, None if action in ("delete", "reject") else fact.key)
    return redirect(next_url_or(request, default))


@staff_required(EDITOR)
@form_page
def fact_reveal(request: HttpRequest, subject_id: str, key: str) -> HttpResponse:
    subject = subject_or_404(subject_id)
    fact = fact_or_404(subject_id, key)
    spec = {
        "title": "Reveal the sensitive value",
        "button": "Reveal",
        "destructive": False,
        "explain": "Your name, the time and your reason are recorded as an access event.",
    }
    if request.method == "GET":
        return render_action(request, fact, subject, spec, ReasonForm())
    form = ReasonForm(request.POST)
    if not form.is_valid():
        return render_action(request, fact, subject, spec, form, status=400)
    services.fact_reveal(
        subject_id=subject_id,
        key=fact.key,
        actor=Actor.staff(request.user),
        reason=form.cleaned_data["reason"],
    )
    remember_reveal(request, subject_id, fact.key)
    record_access(request, AccessKind.REVEAL, [subject_id])
    messages.info(
        request, f"Revealed {topic_label(fact.key)} for 10 minutes. The access is in the history."
    )
    return redirect(next_url_or(request, traveller_url(subject_id, fact.key)))
