"""Staff sign-in hardening: privacy admins pass a second factor (TOTP, django-otp) before any
staff page, and failed logins are locked out per account and per address (django-axes).

Whether the signed-in user needs the second factor is decided once, at login, and kept in the
session, so no page pays an extra query for it. "Verified" is django-otp's own session key,
set by `django_otp.login` when a code matched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django_otp import DEVICE_ID_SESSION_KEY
from django_otp.plugins.otp_totp.models import TOTPDevice

from memoryadmin.middleware import is_api_request

from .roles import PRIVACY_ADMIN, role_of

OTP_REQUIRED_SESSION_KEY = "staff_otp_required"
# Reachable before the second factor: signing in and out, the code page itself, and what is not
# a staff page at all (the agent API, the traveller portal, health checks, static files).
_OPEN_PREFIXES = (
    "/login/",
    "/logout/",
    "/oidc/",
    "/api/",
    "/portal/",
    "/healthz",
    "/static/",
)


def has_mfa(amr: Any) -> bool:
    """Whether an ID token's `amr` claim shows a second factor (OIDC_MFA_AMR)."""
    return isinstance(amr, list) and bool({str(m) for m in amr} & set(settings.OIDC_MFA_AMR))


def requires_second_factor(user: Any) -> bool:
    """Privacy admins pass a second factor: at the identity provider (its `amr`, set on the user
    by the single sign-on backend) or, failing that, the local TOTP code."""
    return role_of(user) == PRIVACY_ADMIN and not has_mfa(getattr(user, "sso_amr", None))


def is_verified(request: HttpRequest) -> bool:
    return bool(request.session.get(DEVICE_ID_SESSION_KEY))


def confirmed_devices(user: Any) -> list[TOTPDevice]:
    return list(TOTPDevice.objects.devices_for_user(user, confirmed=True))


@receiver(user_logged_in)
def _remember_whether_a_second_factor_is_needed(
    sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any
) -> None:
    if request is not None and hasattr(request, "session"):
        request.session[OTP_REQUIRED_SESSION_KEY] = requires_second_factor(user)


class SecondFactorMiddleware:
    """A privacy admin who has not entered a code reaches no staff page: every other address
    redirects to the code page (deny by default, so new pages are covered without a decorator)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if is_api_request(request):  # not a staff page: bearer tokens, no staff session
            return self.get_response(request)
        if self._must_verify(request):
            target = reverse("otp-verify")
            return redirect(f"{target}?{urlencode({'next': request.get_full_path()})}")
        return self.get_response(request)

    @staticmethod
    def _must_verify(request: HttpRequest) -> bool:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return False
        if request.path_info.startswith(_OPEN_PREFIXES) or is_verified(request):
            return False
        needed = request.session.get(OTP_REQUIRED_SESSION_KEY)
        if needed is None:  # a session from before this check existed: decide once
            needed = requires_second_factor(user)
            request.session[OTP_REQUIRED_SESSION_KEY] = needed
        return bool(needed)


class WebLoginLockout(AxesStandaloneBackend):
    """django-axes' check, for logins that come with a request (the login form). A call to
    `authenticate()` without one (Django's test client, a shell) has no address to count and is
    not a web login; axes would refuse it outright, so it is passed on to the next backend."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


def client_ip(request: HttpRequest) -> str | None:
    """The address failed logins are counted against (AXES_CLIENT_IP_CALLABLE). Behind
    TRUSTED_PROXY_HOPS proxies that append to X-Forwarded-For, the address the nearest trusted
    proxy saw; the header is forgeable beyond that, so nothing further left is believed."""
    hops = settings.TRUSTED_PROXY_HOPS
    if hops > 0:
        header = request.META.get("HTTP_X_FORWARDED_FOR", "")
        forwarded = [part.strip() for part in header.split(",") if part.strip()]
        if len(forwarded) >= hops:
            return forwarded[-hops]
    return request.META.get("REMOTE_ADDR")


def lockout_response(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict[str, Any] | None = None,
) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: a clear page (429) saying what happened and for how long."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    return render(request, "registration/locked_out.html", {"minutes": minutes}, status=429)
