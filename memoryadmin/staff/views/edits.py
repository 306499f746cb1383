"""The forms that change a fact (its value, its expiry, a new fact) and bulk actions."""

from __future__ import annotations

from datetime import datetime
from datetime import time as dt_time
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils import timezone

from memoryadmin.facts import selectors as fact_selectors
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactBlocked, FactConflict, FactError, FactInvalid, FactNotFound
from memoryadmin.facts.models import MemoryFact
from memoryadmin.facts.topics import topic_label
from memoryadmin.facts.validation import classify_sensitive, normalize_key
from memoryadmin.http_methods import form_page, post_only

from .. import selectors
from ..forms import BulkForm, ExpiryForm, FactAddForm, FactEditForm
from ..roles import EDITOR
from ..templatetags.staff_time import day as format_day
from .common import (
    FACTS_PER_PAGE,
    fact_or_404,
    next_url_or,
    revealed_keys,
    staff_required,
    subject_or_404,
    traveller_url,
)


@staff_required(EDITOR)
@form_page
def fact_edit(request: HttpRequest, subject_id: str, key: str) -> HttpResponse:
    subject = subject_or_404(subject_id)
    fact = fact_or_404(subject_id, key)
    masked = fact.sensitive and fact.key not in revealed_keys(request, subject_id)
    context = {"subject": subject, "fact": fact, "masked": masked, "next": next_url_or(request, "")}
    if request.method == "GET":
        initial = {"category": fact.category, "version": fact.version}
        if not masked:
            initial["value"] = fact.value
        context["form"] = FactEditForm(initial=initial)
        return render(request, "staff/fact_edit.html", context)
    form = FactEditForm(request.POST)
    context["form"] = form
    if not form.is_valid():
        return render(request, "staff/fact_edit.html", context, status=400)
    data = form.cleaned_data
    try:
        services.fact_edit(
            subject_id=subject_id,
            key=fact.key,
            expected_version=data["version"],
            actor=Actor.staff(request.user),
            value=data["value"],
            category=data["category"],
            reason=data["reason"],
        )
    except FactConflict:
        return _conflict(request, subject, fact, data)
    except (FactBlocked, FactInvalid) as exc:
        form.add_error("value", exc.message)
        return render(request, "staff/fact_edit.html", context, status=400)
    messages.success(
        request, f"Saved {topic_label(fact.key)}. The agent sees the new value from now on."
    )
    return redirect(next_url_or(request, traveller_url(subject_id, fact.key)))


def _conflict(request, subject, fact: MemoryFact, yours: dict[str, Any]) -> HttpResponse:
    """Both versions side by side; saving yours again needs a deliberate second submit."""
    form = FactEditForm(
        initial={
            "value": yours["value"],
            "category": yours["category"],
            "reason": yours["reason"],
            "version": fact.version,
        }
    )
    context = {
        "subject": subject,
        "fact": fact,
        "yours": yours,
        "form": form,
        "masked": fact.sensitive and fact.key not in revealed_keys(request, fact.subject_id),
    }
    return render(request, "staff/fact_conflict.html", context, status=409)


@staff_required(EDITOR)
@form_page
def fact_expiry(request: HttpRequest, subject_id: str, key: str) -> HttpResponse:
    subject = subject_or_404(subject_id)
    fact = fact_or_404(subject_id, key)
    context = {"subject": subject, "fact": fact, "next": next_url_or(request, "")}
    if request.method == "GET":
        initial = {"version": fact.version}
        if fact.expires_at:
            initial["expires_on"] = fact.expires_at.date()
        context["form"] = ExpiryForm(initial=initial)
        return render(request, "staff/fact_expiry.html", context)
    form = ExpiryForm(request.POST)
    context["form"] = form
    if not form.is_valid():
        return render(request, "staff/fact_expiry.html", context, status=400)
    day = form.cleaned_data["expires_on"]
    expires_at = (
        datetime.combine(day, dt_time.min, tzinfo=timezone.get_current_timezone()) if day else None
    )
    try:
        services.fact_set_expiry(
            subject_id=subject_id,
            key=fact.key,
            expires_at=expires_at,
            actor=Actor.staff(request.user),
            reason=form.cleaned_data["reason"],
            expected_version=form.cleaned_data["version"],
        )
    except FactConflict:
        form.add_error(None, "Someone changed this fact since you opened the page; check it.")
        context["fact"] = fact_selectors.subject_fact(subject_id, key) or fact
        return render(request, "staff/fact_expiry.html", context, status=409)
    if expires_at:
        messages.success(request, f"{topic_label(fact.key)} now expires on {format_day(day)}.")
    else:
        messages.success(request, f"{topic_label(fact.key)} follows the retention rules again.")
    return redirect(next_url_or(request, traveller_url(subject_id, fact.key)))


SENSITIVE_WORDS = {
    "health": "health information",
    "mobility": "information about mobility",
    "disability": "information about a disability",
    "pregnancy": "information about a pregnancy",
    "religion": "information about religion",
}


@staff_required(EDITOR)
@form_page
def fact_add(request: HttpRequest, subject_id: str) -> HttpResponse:
    subject = subject_or_404(subject_id)
    form = FactAddForm(request.POST or None)
    context = {"subject": subject, "form": form}
    if request.method == "GET" or not form.is_valid():
        return render(
            request, "staff/fact_add.html", context, status=200 if request.method == "GET" else 400
        )
    data = form.cleaned_data
    try:
        key = normalize_key(data["key"])
        if not key:
            raise FactInvalid("Give a key.", fields={"key": "Give a key."})
        if fact_selectors.subject_fact(subject_id, key) is not None:
            form.add_error("key", "This traveller already has a fact with this key; edit it.")
            return render(request, "staff/fact_add.html", context, status=400)
        topic = classify_sensitive(key, data["value"])
        if topic and not data["confirm_sensitive"]:
            # The same classifier as the agent's facts: say what it found, let the editor confirm.
            context["sensitive_topic"] = SENSITIVE_WORDS.get(topic, topic)
            return render(request, "staff/fact_add.html", context)
        services.fact_upsert(
            subject_id=subject_id,
            facts=[services.FactDraft(key, data["value"], data["category"])],
            actor=Actor.staff(request.user),
            reason=data["reason"],
            expected_versions={key: services.ABSENT},  # checked again under the lock
        )
    except FactConflict:
        # Added by someone else (or the agent) since the check above: both side by side.
        current = fact_selectors.subject_fact(subject_id, key)
        if current is None:  # and already erased again
            form.add_error("key", "This key changed meanwhile; try again.")
            return render(request, "staff/fact_add.html", context, status=409)
        return _conflict(request, subject, current, data)
    except (FactBlocked, FactInvalid) as exc:
        field = "key" if any("key" in name for name in exc.fields) else "value"
        form.add_error(field, exc.message)
        return render(request, "staff/fact_add.html", context, status=400)
    if data["confirm_sensitive"]:
        messages.success(
            request, f"Added {topic_label(key)} as a sensitive fact: masked, never in tier one."
        )
    else:
        messages.success(request, f"Added {topic_label(key)}. The agent can use it from now on.")
    return redirect(traveller_url(subject_id, key))


# action -> (the confirmation's heading, its button), in plain sentences.
BULK_WORDS = {
    "expire": ("Expire {n} {noun} now?", "Expire {n} {noun}"),
    "flag_sensitive": ("Flag {n} {noun} as sensitive?", "Flag {n} {noun}"),
    "delete": ("Delete {n} {noun} for good?", "Delete {n} {noun}"),
}


@staff_required(EDITOR)
@post_only
def bulk(request: HttpRequest, subject_id: str) -> HttpResponse:
    subject = subject_or_404(subject_id)
    wanted = request.POST.getlist("keys")[:FACTS_PER_PAGE]
    if any("\x00" in key for key in wanted):  # no key holds one; PostgreSQL refuses it
        return HttpResponseBadRequest("A key in the request is not valid.")
    facts = selectors.staff_facts_by_keys(subject_id, wanted)
    form = BulkForm(request.POST, keys=[fact.key for fact in facts])
    back = next_url_or(request, "")
    context = {
        "subject": subject,
        "form": form,
        "facts": facts,
        "next": back,
        "revealed": revealed_keys(request, subject_id),
    }
    if not wanted:  # said on the page the editor is on, not on a page of its own
        messages.error(request, "Nothing was changed: select at least one fact first.")
        return redirect(back or traveller_url(subject_id))
    if not form.is_valid():
        return render(request, "staff/bulk_confirm.html", context, status=400)
    data = form.cleaned_data
    label = dict(form.fields["action"].choices)[data["action"]]
    context["action_label"] = label
    if not data["confirmed"]:
        context["facts"] = [fact for fact in facts if fact.key in data["keys"]]
        count = len(context["facts"])
        noun = "fact" if count == 1 else "facts"
        question, button = BULK_WORDS[data["action"]]
        context["question"] = question.format(n=count, noun=noun)
        context["button"] = button.format(n=count, noun=noun)
        return render(request, "staff/bulk_confirm.html", context)
    try:
        done = services.facts_bulk_apply(
            subject_id=subject_id,
            keys=data["keys"],
            action=data["action"],
            actor=Actor.staff(request.user),
            reason=data["reason"],
        )
    except (FactNotFound, FactError) as exc:
        messages.error(request, f"Nothing was changed: {exc.message}")
        return redirect(back or traveller_url(subject_id))
    noun = "fact" if done == 1 else "facts"
    messages.success(request, f"{label}: {done} {noun}.")
    return redirect(back or traveller_url(subject_id))
