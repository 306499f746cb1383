"""What every staff page shares: the role check, the 404 lookups, which sensitive values this
session revealed, safe `next` URLs and paging."""

from __future__ import annotations

import time
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from memoryadmin.access import writer as access_writer
from memoryadmin.access.choices import AccessKind
from memoryadmin.facts import selectors as fact_selectors
from memoryadmin.facts.errors import (
    FactConflict,
    FactError,
    FactNotFound,
    FactStateError,
    WriteFilterMisconfigured,
)
from memoryadmin.facts.keyhash import key_digest
from memoryadmin.facts.models import MemoryFact, Subject

from ..roles import has_role
from ..security import client_ip

# 50 rows: two screens of a dense table, quick to scan and to render; sortable, and paged below.
FACTS_PER_PAGE = 50
EVENTS_PER_PAGE = 50
TRAVELLERS_PER_PAGE = 50
REVEAL_SECONDS = 10 * 60


def staff_required(role: str):
    """Log in first; then the role, or 403 (a logged-in account without a staff role is refused)."""

    def decorator(view):
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not has_role(request.user, role):
                raise PermissionDenied("This page is for support staff.")
            try:
                return view(request, *args, **kwargs)
            except FactError as exc:  # whatever a view did not handle itself
                return fact_error_page(request, exc)

        return wrapped

    return decorator


# Every FactError a staff view leaves unhandled, mapped once, to the status the agent API gives
# it and the service's own message (a fact erased by someone else meanwhile is a 404, not a 500).
_FACT_ERROR_STATUS: tuple[tuple[type[FactError], int], ...] = (
    (WriteFilterMisconfigured, 503),
    (FactNotFound, 404),
    (FactConflict, 409),
    (FactStateError, 409),
)


def fact_error_page(request: HttpRequest, exc: FactError) -> HttpResponse:
    status = next((code for cls, code in _FACT_ERROR_STATUS if isinstance(exc, cls)), 400)
    if isinstance(exc, FactNotFound):
        message = "This fact is no longer there: someone deleted it meanwhile. Nothing was changed."
    else:
        message = f"Nothing was changed: {exc.message}"
    return render(request, "staff/fact_error.html", {"message": message}, status=status)


def subject_or_404(subject_id: str) -> Subject:
    subject = fact_selectors.subject_get(subject_id)
    if subject is None:
        raise Http404("No such traveller.")
    return subject


def fact_or_404(subject_id: str, key: str) -> MemoryFact:
    fact = fact_selectors.subject_fact(subject_id, key)
    if fact is None:
        raise Http404("No such fact.")
    return fact


class RevealedKeys:
    """The keys of one traveller whose sensitive value this session revealed (for a few
    minutes), tested with `key in revealed`. The session stores each as its keyed hash
    (`facts.keyhash.key_digest`), never the key: an erased fact's topic must not wait in
    django_session until the session ends."""

    def __init__(self, subject_id: str, digests: set[str]) -> None:
        self.subject_id = subject_id
        self.digests = digests

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key_digest(self.subject_id, key) in self.digests


def revealed_keys(request: HttpRequest, subject_id: str) -> RevealedKeys:
    now = time.time()
    entries = request.session.get("revealed", {})
    return RevealedKeys(subject_id, {name for name, until in entries.items() if until > now})


def remember_reveal(request: HttpRequest, subject_id: str, key: str) -> None:
    now = time.time()
    entries = {
        k: v
        for k, v in request.session.get("revealed", {}).items()
        if v > now and k.startswith("#")  # entries of the old form held the key itself
    }
    entries[key_digest(subject_id, key)] = now + REVEAL_SECONDS
    request.session["revealed"] = entries


def next_url_or(request: HttpRequest, default: str) -> str:
    candidate = request.POST.get("next") or request.GET.get("next") or ""
    if candidate and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return default


def traveller_url(subject_id: str, key: str | None = None) -> str:
    url = reverse("staff:traveller", args=[subject_id])
    return f"{url}#fact-{key}" if key else url


def page_of(request: HttpRequest, items: Any, per_page: int):
    return Paginator(items, per_page).get_page(request.GET.get("page"))


def query_without_page(request: HttpRequest) -> str:
    params = request.GET.copy()
    params.pop("page", None)
    return params.urlencode()


def record_access(request: HttpRequest, what: AccessKind, subject_ids: list[str]) -> None:
    """Put this read on the staff access record (written after the response, in one INSERT)."""
    user = request.user
    access_writer.record(
        staff_user_id=user.pk,
        staff_username=user.get_username(),
        what=what,
        subject_ids=subject_ids,
        address=client_ip(request),
        login_method=request.session.get("staff_login_method", ""),
    )
