"""The review queue: pending facts across travellers, approved or rejected with a reason."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactConflict, FactStateError
from memoryadmin.facts.topics import topic_label
from memoryadmin.http_methods import post_only, read_only

from .. import selectors
from ..forms import ReasonForm, ReviewForm
from ..roles import EDITOR, VIEWER, has_role
from .actions import SIMPLE_ACTIONS, render_action
from .common import (
    EVENTS_PER_PAGE,
    RevealedKeys,
    fact_or_404,
    page_of,
    revealed_keys,
    staff_required,
    subject_or_404,
)


@staff_required(VIEWER)
@read_only
def review(request: HttpRequest) -> HttpResponse:
    """The queue shows sensitive values masked, so loading it looks at nothing and writes
    nothing to the access record. An editor reveals one value (one click, one reason: one
    access row) and may then decide on it; the service refuses a decision on an unseen value."""
    page = page_of(request, selectors.staff_review_queue(), EVENTS_PER_PAGE)
    editor = has_role(request.user, EDITOR)
    revealed: dict[str, RevealedKeys] = {}
    rows = []
    for fact in page.object_list:
        if fact.subject_id not in revealed:
            revealed[fact.subject_id] = revealed_keys(request, fact.subject_id)
        masked = fact.sensitive and fact.key not in revealed[fact.subject_id]
        rows.append(
            {
                "fact": fact,
                "masked": masked,
                "can_decide": editor and not masked,
                "form": ReviewForm(initial={"version": fact.version}, prefix=f"f{fact.pk}"),
            }
        )
    return render(request, "staff/review.html", {"page": page, "rows": rows})


@staff_required(EDITOR)
@post_only
def review_decide(request: HttpRequest, subject_id: str, key: str) -> HttpResponse:
    subject = subject_or_404(subject_id)
    fact = fact_or_404(subject_id, key)
    form = ReviewForm(request.POST, prefix=f"f{fact.pk}")
    queue = reverse("staff:review")
    if not form.is_valid():
        decision = form.data.get(f"f{fact.pk}-decision")
        spec = SIMPLE_ACTIONS["reject" if decision == "reject" else "approve"]
        retry = ReasonForm({"reason": "", "version": fact.version})
        retry.is_valid()  # shows "Give a reason" beside the field
        return render_action(request, fact, subject, spec, retry, status=400, next_url=queue)
    decision = form.cleaned_data["decision"]
    spec = SIMPLE_ACTIONS[decision]
    if decision == "reject" and request.POST.get("confirmed") != "yes":
        # Rejecting erases: confirm it on its own page, the reason carried over.
        confirm = ReasonForm(
            {"reason": form.cleaned_data["reason"], "version": form.cleaned_data["version"]}
        )
        confirm.is_valid()
        return render(
            request,
            "staff/review_reject.html",
            {
                "fact": fact,
                "subject": subject,
                "spec": spec,
                "form": confirm,
                "masked": fact.sensitive
                and fact.key not in revealed_keys(request, fact.subject_id),
                "decision_field": form["decision"].html_name,
                "prefix": f"f{fact.pk}",
            },
        )
    try:
        services.fact_review_decide(
            subject_id=fact.subject_id,
            key=fact.key,
            decision=decision,
            actor=Actor.staff(request.user),
            reason=form.cleaned_data["reason"],
            expected_version=form.cleaned_data["version"],
        )
    except FactConflict:
        messages.error(
            request, f"{topic_label(fact.key)} was changed meanwhile; check it and decide again."
        )
        return redirect(queue)
    except FactStateError as exc:
        messages.error(request, exc.message)
        return redirect(queue)
    messages.success(request, spec["done"].format(key=topic_label(fact.key)))
    return redirect(queue)
