"""Per-token rate limit, so one runaway agent host cannot starve the others.

The rate is read from settings.API_THROTTLE_RATE on every request (not frozen at import), and
counts live in the default Django cache.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from .models import ServiceToken


class TokenRateThrottle(SimpleRateThrottle):
    scope = "service_token"

    def get_rate(self) -> str:
        return settings.API_THROTTLE_RATE

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        token = request.auth
        if not isinstance(token, ServiceToken):
            return None  # unauthenticated requests are refused before throttling
        return self.cache_format % {"scope": self.scope, "ident": token.pk}
