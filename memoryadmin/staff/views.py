"""The support dashboard. Every view checks the staff role before reading anything."""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memoryadmin.facts import selectors

from .roles import VIEWER, has_role, role_of


def staff_required(role: str):
    """Log in first; then the role, or 403 (a logged-in traveller account is not staff)."""

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


@staff_required(VIEWER)
def home(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "")[:128]
    return render(
        request,
        "staff/home.html",
        {
            "query": query,
            "subjects": selectors.subjects_overview(query=query),
            "role": role_of(request.user),
        },
    )
