"""drf-spectacular: ServiceTokenAuthentication documented as HTTP bearer auth, and the schema and
docs views, which answer every error in the API's JSON shape."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponseBase
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response


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


class JsonErrorsMixin:
    """drf-spectacular's views render with their own renderers (YAML, OpenAPI JSON, HTML), and
    DRF renders an error with whichever renderer it negotiated, or with the first one when
    negotiation itself failed (a 406, or a 404 for an unknown `?format=`). So an `Accept:
    text/html` or a `?format=xml` got a YAML or HTML error page. Errors under /api/ are JSON in
    the house shape (errors.py) whatever was asked for; a successful answer is left as it was."""

    def finalize_response(
        self, request: Request, response: HttpResponseBase, *args: Any, **kwargs: Any
    ) -> HttpResponseBase:
        response = super().finalize_response(  # type: ignore[misc]
            request, response, *args, **kwargs
        )
        if isinstance(response, Response) and response.status_code >= 400:
            response.accepted_renderer = JSONRenderer()
            response.accepted_media_type = "application/json"
            response.template_name = None
        return response


class SchemaView(JsonErrorsMixin, SpectacularAPIView):
    """The OpenAPI document (YAML by default, JSON on request); errors as JSON."""


class SwaggerView(JsonErrorsMixin, SpectacularSwaggerSplitView):
    """Swagger UI (page and its setup script); errors as JSON."""


class RedocView(JsonErrorsMixin, SpectacularRedocView):
    """Redoc; errors as JSON."""
