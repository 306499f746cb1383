"""The review queue: pending facts across travellers, approved or rejected with a reason."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from memoryadmin.access.choices import AccessKind
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactConflict, FactStateError

from .. import selectors
from ..forms import ReasonForm, ReviewForm
from ..roles import EDITOR, VIEWER, has_role
from .actions import SIMPLE_ACTIONS, render_action
from .common import (
    EVENTS_PER_PAGE,
    fact_or_404,
    page_of,
    record_access,
    staff_required,
    subject_or_404,
)


@staff_required(VIEWER)
def review(request: HttpRequest) -> HttpResponse:
    page = page_of(request, selectors.staff_review_queue(), EVENTS_PER_PAGE)
    revealed = set(request.session.get("revealed", {}))  # "subject\x1fkey" entries
    # Editors decide, so they see every value: their decision records the look with its reason.
    editor = has_role(request.user, EDITOR)
    rows = [
        {
            "fact": fact,
            "masked": fact.sensitive
            and not editor
            and f"{fact.subject_id}\x1f{fact.key}" not in revealed,
            "shown_sensitive": fact.sensitive and editor,
            "form": ReviewForm(initial={"version": fact.version}, prefix=f"f{fact.pk}"),
        }
        for fact in page.object_list
    ]
    # A sensitive value shown to an editor is a look at that traveller's memory, decided on or
    # not: it goes on the access record like a reveal (the decision adds its own event).
    shown = sorted({row["fact"].subject_id for row in rows if row["shown_sensitive"]})
    if shown:
        record_access(request, AccessKind.REVEAL, shown)
    return render(request, "staff/review.html", {"page": page, "rows": rows})


@staff_required(EDITOR)
@require_POST
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
                "masked": False,
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
        messages.error(request, f"{fact.key} was changed meanwhile; check it and decide again.")
        return redirect(queue)
    except FactStateError as exc:
        messages.error(request, exc.message)
        return redirect(queue)
    messages.success(request, spec["done"].format(key=fact.key))
    return redirect(queue)
