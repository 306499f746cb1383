"""Redact one past version of a fact: privacy admins only, from the fact's history, with a
reason, confirmed on its own page. The service (`facts.services.fact_version_redact`) refuses
the current version and a version the history does not hold."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from memoryadmin.facts import selectors as fact_selectors
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactStateError
from memoryadmin.facts.models import FactEvent, MemoryFact
from memoryadmin.http_methods import form_page

from ..forms import reason_field
from ..roles import PRIVACY_ADMIN
from .common import fact_or_404, revealed_keys, staff_required, subject_or_404


class RedactForm(forms.Form):
    reason = reason_field("Why this version is redacted")


def _written(fact: MemoryFact, version: int) -> FactEvent | None:
    """The event that wrote `version` of the fact's current life, or None."""
    return (
        fact_selectors.fact_history(fact.subject_id, fact.key)
        .filter(key=fact.key, after__contains={"version": version})
        .first()
    )


def _same_words(fact: MemoryFact, written: FactEvent) -> list[int]:
    """The fact's other past versions that hold the same words (a flag or an expiry change
    copies the value into its own version): each stays until redacted too."""
    after = written.after or {}
    if after.get("value") is None:
        return []
    versions = (
        fact_selectors.fact_history(fact.subject_id, fact.key)
        .filter(key=fact.key, after__value=after["value"])
        .values_list("after__version", flat=True)
    )
    mine = after.get("version")
    return sorted({v for v in versions if isinstance(v, int) and v not in (mine, fact.version)})


def _page(
    request: HttpRequest, fact: MemoryFact, written: FactEvent, form: RedactForm, **extra: Any
) -> HttpResponse:
    status = extra.pop("status", 200)
    after = written.after or {}
    context = {
        "subject": fact_selectors.subject_get(fact.subject_id),
        "fact": fact,
        "written": written,
        "version": after.get("version"),
        "old_value": after.get("value"),
        "old_quote": after.get("evidence", ""),
        "already": bool(after.get("redacted_at")),
        # the current version, or one with its words: a correction or a delete
        "current": after.get("version") == fact.version or after.get("value") == fact.value,
        "masked": bool(after.get("sensitive") or fact.sensitive)
        and fact.key not in revealed_keys(request, fact.subject_id),
        "same_words": _same_words(fact, written),
        "form": form,
        **extra,
    }
    return render(request, "staff/fact_redact.html", context, status=status)


@staff_required(PRIVACY_ADMIN)
@form_page
def version_redact(request: HttpRequest, subject_id: str, key: str, version: int) -> HttpResponse:
    subject_or_404(subject_id)
    fact = fact_or_404(subject_id, key)
    written = _written(fact, version)
    if written is None:
        raise Http404("This fact has no such version.")
    if request.method == "GET":
        return _page(request, fact, written, RedactForm())
    form = RedactForm(request.POST)
    if not form.is_valid():
        return _page(request, fact, written, form, status=400)
    try:
        services.fact_version_redact(
            subject_id=fact.subject_id,
            key=fact.key,
            version=version,
            actor=Actor.staff(request.user),
            reason=form.cleaned_data["reason"],
        )
    except FactStateError as exc:
        return _page(request, fact, written, form, status=400, error=exc.message)
    messages.success(request, f"Version {version} is redacted: its value and quote are gone.")
    return redirect(reverse("staff:fact", args=[fact.subject_id, fact.key]))
