"""Staff single sign-on with the airline's identity provider (OpenID Connect, mozilla-django-oidc).

The endpoints come from the issuer's discovery document (`OIDC_ISSUER`), fetched once per
process. What this module adds to the library:
- the ID token's `iss`, `aud`, `exp` and `iat` are checked here too (the library checks the
  signature, the nonce and, through PyJWT, the expiry);
- the staff role follows the provider's groups (`OIDC_ROLE_MAP`) at every sign-in and every
  silent re-check: someone whose groups map to no role loses every role group at once (so all
  their sessions are refused on the next page) and is signed out;
- a privacy admin whose `amr` shows MFA needs no local TOTP code (`security.py` reads it);
- a refused sign-in is a clear page, never a 500.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import jwt
import requests
from django.conf import settings
from django.contrib import auth
from django.contrib.auth.models import Group
from django.core.exceptions import ImproperlyConfigured, SuspiciousOperation
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.deprecation import MiddlewareMixin
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.middleware import SessionRefresh
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from .roles import ROLES
from .security import OTP_REQUIRED_SESSION_KEY, requires_second_factor

logger = logging.getLogger("memoryadmin.staff.sso")

# Library setting -> key of the discovery document.
_DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
_discovery_cache: dict[str, dict[str, Any]] = {}
AMR_SESSION_KEY = "staff_sso_amr"
REFUSAL_ATTRIBUTE = "_sso_refusal"
SSO_BACKEND = "memoryadmin.staff.sso.StaffOIDCBackend"

REFUSALS = {
    "no_role": "Your account at the airline's identity provider is not in any group that gives "
    "access to this dashboard. If you need access, ask your manager to add you to the right "
    "group; if you had access until now, it has been removed.",
    "invalid": "The sign-in could not be completed: the answer from the identity provider did "
    "not check out (it may have expired or been replayed). Start again from the sign-in page.",
    "local_account": "This name belongs to a local break-glass account and cannot be used "
    "through single sign-on. Ask a privacy admin.",
}


def sso_enabled() -> bool:
    return bool(settings.OIDC_ISSUER)


def discovery(issuer: str | None = None) -> dict[str, Any]:
    """The provider's discovery document, fetched once per process and checked: its `issuer`
    must be the configured one (OpenID Connect Discovery 1.0, section 4.3)."""
    issuer = (issuer or settings.OIDC_ISSUER).rstrip("/")
    if not issuer:
        raise ImproperlyConfigured("OIDC_ISSUER is not set.")
    cached = _discovery_cache.get(issuer)
    if cached is None:
        response = requests.get(
            f"{issuer}/.well-known/openid-configuration", timeout=settings.OIDC_TIMEOUT
        )
        response.raise_for_status()
        cached = response.json()
        if str(cached.get("issuer", "")).rstrip("/") != issuer:
            raise ImproperlyConfigured("The discovery document names another issuer.")
        _discovery_cache[issuer] = cached
    return cached


def forget_discovery() -> None:
    _discovery_cache.clear()


def sso_setting(attr: str, *args: Any) -> Any:
    if attr in _DISCOVERED:
        return discovery()[_DISCOVERED[attr]]
    return import_from_settings(attr, *args)


def role_map() -> dict[str, str]:
    """`OIDC_ROLE_MAP` ("group=role,group=role") as a dict; an unknown role is a setup error."""
    mapping = {}
    for item in settings.OIDC_ROLE_MAP.split(","):
        if not item.strip():
            continue
        group, _, role = item.partition("=")
        role = role.strip()
        if role not in ROLES:
            raise ImproperlyConfigured(f"OIDC_ROLE_MAP: unknown role {role!r}.")
        mapping[group.strip()] = role
    return mapping


def role_from_claims(claims: dict[str, Any]) -> str | None:
    """The strongest role that the person's groups give, or None."""
    groups = claims.get(settings.OIDC_GROUPS_CLAIM) or []
    if isinstance(groups, str):
        groups = [groups]
    mapping = role_map()
    held = {mapping[group] for group in groups if isinstance(group, str) and group in mapping}
    return max(held, key=ROLES.index, default=None)


def set_role(user: Any, role: str | None) -> None:
    """Exactly this role group (and no other role group); other groups are left alone."""
    role_groups = list(Group.objects.filter(name__in=ROLES))
    user.groups.remove(*[group for group in role_groups if group.name != role])
    if role is not None:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    user._staff_role = role  # the cache of roles.role_of for this request


class StaffOIDCBackend(OIDCAuthenticationBackend):
    get_settings = staticmethod(sso_setting)

    def verify_token(self, token: Any, **kwargs: Any) -> dict[str, Any]:
        payload = super().verify_token(token, **kwargs)
        now = time.time()
        skew = settings.OIDC_CLOCK_SKEW_SECONDS
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if str(payload.get("iss", "")).rstrip("/") != settings.OIDC_ISSUER:
            raise SuspiciousOperation("ID token from another issuer.")
        if settings.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("ID token for another client.")
        if not isinstance(payload.get("exp"), int | float) or payload["exp"] + skew < now:
            raise SuspiciousOperation("ID token expired.")
        if isinstance(payload.get("iat"), int | float) and payload["iat"] - skew > now:
            raise SuspiciousOperation("ID token issued in the future.")
        return payload

    def get_userinfo(self, access_token: str, id_token: str, payload: dict) -> dict[str, Any]:
        """The userinfo answer, under the ID token's own claims (which carry `amr`)."""
        claims = dict(super().get_userinfo(access_token, id_token, payload))
        claims.update({k: v for k, v in payload.items() if k in ("amr", "sub", "acr")})
        if settings.OIDC_GROUPS_CLAIM in payload and settings.OIDC_GROUPS_CLAIM not in claims:
            claims[settings.OIDC_GROUPS_CLAIM] = payload[settings.OIDC_GROUPS_CLAIM]
        return claims

    def get_username(self, claims: dict[str, Any]) -> str:
        name = claims.get("email") or claims.get("preferred_username") or claims["sub"]
        return str(name)[:150]

    def _refuse(self, reason: str) -> None:
        if self.request is not None:
            setattr(self.request, REFUSAL_ATTRIBUTE, reason)

    @transaction.atomic
    def get_or_create_user(self, access_token: str, id_token: str, payload: dict) -> Any:
        claims = self.get_userinfo(access_token, id_token, payload)
        if not claims.get("sub"):
            raise SuspiciousOperation("No subject in the claims.")
        user_model = auth.get_user_model()
        username = self.get_username(claims)
        user = user_model.objects.select_for_update().filter(username=username).first()
        if user is not None and user.has_usable_password():
            self._refuse("local_account")
            return None
        role = role_from_claims(claims)
        if role is None:
            if user is not None:
                set_role(user, None)  # every session of theirs is refused from the next page
            logger.info("sso: sign-in refused, no mapped group")
            self._refuse("no_role")
            return None
        if user is None:
            user = user_model(username=username, email=str(claims.get("email") or "")[:254])
            user.set_unusable_password()
            user.save()
        elif not user.is_active:
            return None
        set_role(user, role)
        user.sso_amr = list(claims.get("amr") or [])
        return user


def _refusal_page(request: HttpRequest, reason: str) -> HttpResponse:
    status = 400 if reason == "invalid" else 403
    return render(
        request, "registration/sso_refused.html", {"message": REFUSALS[reason]}, status=status
    )


class StaffOIDCStart(OIDCAuthenticationRequestView):
    get_settings = staticmethod(sso_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not sso_enabled():
            return render(request, "404.html", status=404)
        return super().get(request)


class StaffOIDCCallback(OIDCAuthenticationCallbackView):
    """The provider's answer. A bad state, nonce, signature or expiry is a clear refusal
    (400); a person without a mapped group is signed out and refused (403)."""

    get_settings = staticmethod(sso_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not sso_enabled():
            return render(request, "404.html", status=404)
        try:
            return super().get(request)
        except (SuspiciousOperation, jwt.PyJWTError, requests.RequestException) as exc:
            logger.warning("sso: sign-in refused: %s", type(exc).__name__)
            if request.user.is_authenticated:
                auth.logout(request)
            return _refusal_page(request, "invalid")

    def login_success(self) -> HttpResponse:
        response = super().login_success()
        # A silent re-check does not log in again: the second-factor decision follows the new
        # role and `amr` here (a first sign-in made it in security.py's user_logged_in receiver).
        self.request.session[AMR_SESSION_KEY] = getattr(self.user, "sso_amr", [])
        self.request.session[OTP_REQUIRED_SESSION_KEY] = requires_second_factor(self.user)
        return response

    def login_failure(self) -> HttpResponse:
        if self.request.user.is_authenticated:
            auth.logout(self.request)
        reason = getattr(self.request, REFUSAL_ATTRIBUTE, None) or "invalid"
        return _refusal_page(self.request, reason)


class RecheckMiddleware(SessionRefresh):
    """mozilla-django-oidc's SessionRefresh for SSO sessions only: every
    OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS a staff page goes back to the provider with prompt=none,
    and the callback sets the role again (or signs the person out). Off without OIDC_ISSUER;
    never on the agent API, the portal or static files."""

    _SKIPPED = ("/api/", "/portal/", "/static/", "/healthz", "/oidc/")

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        MiddlewareMixin.__init__(self, get_response)  # the discovery waits for the first use
        self._configured = False

    def _configure(self) -> None:
        if not self._configured:
            super().__init__(self.get_response)
            self._configured = True

    get_settings = staticmethod(sso_setting)

    @property
    def exempt_urls(self) -> set[str]:  # the library's own list names a logout URL we lack
        return {reverse(name) for name in settings.OIDC_EXEMPT_URLS}

    def is_refreshable_url(self, request: HttpRequest) -> bool:
        if request.path_info.startswith(self._SKIPPED) or not hasattr(request, "user"):
            return False
        return super().is_refreshable_url(request)

    def process_request(self, request: HttpRequest) -> HttpResponse | None:
        if not sso_enabled() or request.path_info.startswith(self._SKIPPED):
            return None
        if not hasattr(request, "user") or not request.user.is_authenticated:
            return None
        self._configure()
        return super().process_request(request)


def _only_with_sso(view_class: type) -> Any:
    """The view, or — on a deployment without an identity provider — the sign-in page. The
    library's views read the provider's settings when they are made, before `get` runs, so the
    check comes first (without it `/oidc/authenticate/` answered 500)."""
    real = view_class.as_view()

    def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not sso_enabled():
            return redirect("login")
        return real(request, *args, **kwargs)

    view.__name__ = view_class.__name__
    view.__doc__ = view_class.__doc__
    return view


oidc_start = _only_with_sso(StaffOIDCStart)
oidc_callback = _only_with_sso(StaffOIDCCallback)
