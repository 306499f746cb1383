"""Bearer-token authentication for agent hosts: `Authorization: Bearer <secret>`.

`request.auth` is the ServiceToken; `request.user` is a small principal standing for the token
(never a staff user), so nothing downstream mistakes an agent for a person.
"""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from .models import ServiceToken
from .tokens import token_authenticate

KEYWORD = "bearer"
REALM = "memoryadmin"


@dataclass(frozen=True)
class TokenPrincipal:
    """Who the request is from when it carries a service token."""

    token: ServiceToken
    is_authenticated: bool = True
    is_anonymous: bool = False

    def get_username(self) -> str:
        return f"token:{self.token.name}"

    def __str__(self) -> str:
        return self.get_username()


class ServiceTokenAuthentication(BaseAuthentication):
    """No header (or another scheme) means anonymous, which the permissions turn into 401; a
    Bearer header that does not name an active token is a 401 straight away."""

    def authenticate(self, request: Request) -> tuple[TokenPrincipal, ServiceToken] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        parts = header.split()
        if not parts or parts[0].lower() != KEYWORD:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(
                "Malformed Authorization header; expected `Bearer <token>`."
            )
        token = token_authenticate(parts[1])
        if token is None:
            raise exceptions.AuthenticationFailed("The token is unknown or has been revoked.")
        return TokenPrincipal(token), token

    def authenticate_header(self, request: Request) -> str:
        return f'Bearer realm="{REALM}"'
