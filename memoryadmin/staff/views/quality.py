"""Memory quality: the precision page and the weekly sample reviewers mark. Editors
and up. The sample masks sensitive values as the review queue does: one reveal (one reason,
one access row) shows a value, and only then can it be marked."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactError
from memoryadmin.http_methods import post_only, read_only
from memoryadmin.quality import selectors
from memoryadmin.quality.models import QualitySampleItem
from memoryadmin.quality.services import quality_mark_record, quality_sample_draw

from ..forms import QualityMarkForm
from ..roles import EDITOR
from .common import RevealedKeys, revealed_keys, staff_required


@staff_required(EDITOR)
@read_only
def quality(request: HttpRequest) -> HttpResponse:
    """Precision with its Wilson interval, overall, by each dimension and by week, beside the
    signals that need no reviewer: a fixed number of queries whatever the number of marks."""
    return render(
        request,
        "staff/quality.html",
        {
            "report": selectors.quality_report(),
            "signals": selectors.quality_signals(),
            "sample": selectors.quality_sample_current(),
            "weeks": selectors.QUALITY_WEEKS,
        },
    )


@staff_required(EDITOR)
@read_only
def quality_sample(request: HttpRequest) -> HttpResponse:
    """The latest sample's facts, each with its mark form; sensitive values masked until this
    reviewer reveals them."""
    sample = selectors.quality_sample_current()
    items = selectors.quality_sample_items(sample) if sample else []
    revealed: dict[str, RevealedKeys] = {}
    rows = []
    for item in items:
        fact = item.fact
        masked = False
        if fact is not None and fact.sensitive:
            if fact.subject_id not in revealed:
                revealed[fact.subject_id] = revealed_keys(request, fact.subject_id)
            masked = fact.key not in revealed[fact.subject_id]
        rows.append(
            {
                "item": item,
                "fact": fact,
                "masked": masked,
                "form": QualityMarkForm(
                    # No mark chosen in advance: a reviewer picks one for each fact.
                    initial={"mark": item.mark, "reason": item.reason},
                    prefix=f"q{item.pk}",
                ),
            }
        )
    marked = sum(1 for item in items if item.mark)
    return render(
        request,
        "staff/quality_sample.html",
        {"sample": sample, "rows": rows, "marked": marked, "total": len(items)},
    )


@staff_required(EDITOR)
@post_only
def quality_draw(request: HttpRequest) -> HttpResponse:
    sample = quality_sample_draw(actor=Actor.staff(request.user))
    taken = sample.items.count()
    messages.success(
        request,
        f"Drew {taken} of the {sample.candidates} facts learned in the last 7 days"
        " and not yet sampled this week.",
    )
    return redirect("staff:quality_sample")


@staff_required(EDITOR)
@post_only
def quality_mark(request: HttpRequest, item_id: int) -> HttpResponse:
    item = QualitySampleItem.objects.filter(pk=item_id).first()
    if item is None:
        raise Http404("No such sampled fact.")
    back = reverse("staff:quality_sample") + f"#item-{item.pk}"
    form = QualityMarkForm(request.POST, prefix=f"q{item.pk}")
    if not form.is_valid():
        if "mark" in form.errors:
            messages.error(request, "Not marked: choose Correct or Wrong.")
        else:
            messages.error(request, "Not marked: choose why it is wrong, or mark it correct.")
        return redirect(back)
    try:
        quality_mark_record(
            actor=Actor.staff(request.user),
            item=item,
            mark=form.cleaned_data["mark"],
            reason=form.cleaned_data["reason"],
        )
    except FactError as exc:
        messages.error(request, f"Not marked: {exc.message}")
        return redirect(back)
    messages.success(request, "Marked. The mark is in the fact's history.")
    return redirect(back)
