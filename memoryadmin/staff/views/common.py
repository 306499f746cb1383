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
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from memoryadmin.access import writer as access_writer
from memoryadmin.access.choices import AccessKind
from memoryadmin.facts import selectors as fact_selectors
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
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


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


def revealed_keys(request: HttpRequest, subject_id: str) -> set[str]:
    """Keys of this traveller whose sensitive value this session revealed (for a few minutes)."""
    now = time.time()
    entries = request.session.get("revealed", {})
    prefix = f"{subject_id}\x1f"
    return {
        name[len(prefix) :]
        for name, until in entries.items()
        if name.startswith(prefix) and until > now
    }


def remember_reveal(request: HttpRequest, subject_id: str, key: str) -> None:
    now = time.time()
    entries = {k: v for k, v in request.session.get("revealed", {}).items() if v > now}
    entries[f"{subject_id}\x1f{key}"] = now + REVEAL_SECONDS
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
