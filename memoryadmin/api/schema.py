"""drf-spectacular extension: document ServiceTokenAuthentication as HTTP bearer auth."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ServiceTokenScheme(OpenApiAuthenticationExtension):
    target_class = "memoryadmin.api.auth.ServiceTokenAuthentication"
    name = "serviceToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A service token issued by a privacy admin "
            "(`manage.py create_service_token`): `Authorization: Bearer <token>`. Each operation "
            "names the scope it needs (memory:read, memory:write, turns:write, portal:issue).",
        }
