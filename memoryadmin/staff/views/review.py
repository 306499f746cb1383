"""The review queue: pending facts across travellers, approved or rejected with a reason."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from memoryadmin.facts.errors import FactConflict, FactStateError

from .. import selectors
from ..forms import ReasonForm, ReviewForm
from ..roles import EDITOR, VIEWER
from .actions import SIMPLE_ACTIONS, apply_action, render_action
from .common import EVENTS_PER_PAGE, fact_or_404, page_of, staff_required, subject_or_404


@staff_required(VIEWER)
def review(request: HttpRequest) -> HttpResponse:
    page = page_of(request, selectors.staff_review_queue(), EVENTS_PER_PAGE)
    revealed = set(request.session.get("revealed", {}))  # "subject\x1fkey" entries
    rows = [
        {
            "fact": fact,
            "masked": fact.sensitive and f"{fact.subject_id}\x1f{fact.key}" not in revealed,
            "form": ReviewForm(initial={"version": fact.version}, prefix=f"f{fact.pk}"),
        }
        for fact in page.object_list
    ]
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
    try:
        apply_action(request, spec, fact, form.cleaned_data)
    except FactConflict:
        messages.error(request, f"{fact.key} was changed meanwhile; check it and decide again.")
        return redirect(queue)
    except FactStateError as exc:
        messages.error(request, exc.message)
        return redirect(queue)
    messages.success(request, spec["done"].format(key=fact.key))
    return redirect(queue)
