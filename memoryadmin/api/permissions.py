"""Scope checks for service tokens.

    permission_classes = [scope_required("turns:write")]

or, for a view whose methods need different scopes, `permission_classes = [HasScope]` with
`required_scopes = {"GET": ("memory:read",), "PUT": ("memory:write",)}` on the view. A request
without a valid token gets 401 (DRF does that when no authenticator succeeded); a valid token
without the scope gets 403 `insufficient_scope`.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from .errors import InsufficientScope
from .models import Scope, ServiceToken


class HasScope(BasePermission):
    """Requires an active service token holding every scope in `scopes` (set by
    `scope_required`) or, when that is empty, in the view's `required_scopes[method]`.
    With neither, any valid token passes."""

    scopes: tuple[str, ...] = ()

    def required(self, request: Request, view: Any) -> tuple[str, ...]:
        if self.scopes:
            return self.scopes
        by_method = getattr(view, "required_scopes", None) or {}
        method = "GET" if request.method == "HEAD" else request.method
        return tuple(by_method.get(method, ()))

    def has_permission(self, request: Request, view: Any) -> bool:
        token = request.auth
        if not isinstance(token, ServiceToken):
            return False
        missing = [scope for scope in self.required(request, view) if scope not in token.scopes]
        if missing:
            raise InsufficientScope(missing)
        return True


def scope_required(*scopes: str) -> type[HasScope]:
    """A permission class requiring all of `scopes`; unknown scope names fail at import."""
    unknown = [scope for scope in scopes if scope not in Scope.values]
    if unknown or not scopes:
        raise ValueError(f"scope_required needs known scopes, got {scopes!r}")
    name = "HasScope_" + "_".join(scope.replace(":", "_") for scope in scopes)
    return type(name, (HasScope,), {"scopes": tuple(scopes), "__doc__": HasScope.__doc__})
