"""POST /api/v1/subjects/{subject_id}/portal-links: the airline's backend, where the traveller
is already signed in, asks for a single-use link into the privacy portal.

The answer carries the link's secret, so it is never stored as an idempotent reply (that would
keep a working credential in the database): each call issues a new link, and only its hash is
kept.
"""

from __future__ import annotations

from datetime import UTC

from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from memoryadmin.portal.services import BadTimeZone, portal_link_issue
from memoryadmin.portal.services import clean_time_zone as _clean_zone

from .models import Scope
from .views import COMMON, SUBJECT_PARAM, SubjectView, _doc, _errors

PORTAL_ISSUE = (Scope.PORTAL_ISSUE.value,)


class PortalLinkRequestSerializer(serializers.Serializer):
    time_zone = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=64,
        help_text="Accepted for compatibility and not used: the portal shows every time in the "
        "airline's one time zone (TIME_ZONE). An IANA name if given; anything else is refused.",
    )

    def validate_time_zone(self, value: str) -> str:
        try:
            return value and _clean_zone(value)
        except BadTimeZone as exc:
            raise serializers.ValidationError(
                'Not an IANA time zone name; use one like "Asia/Taipei".'
            ) from exc


class PortalLinkSerializer(serializers.Serializer):
    url = serializers.URLField(help_text="Send the traveller's browser here; it works once.")
    expires_at = serializers.DateTimeField(
        default_timezone=UTC, help_text="The link stops working after this time."
    )


def portal_url(request: Request, secret: str) -> str:
    path = reverse("portal:open", kwargs={"secret": secret})
    base = settings.PORTAL_BASE_URL
    return f"{base}{path}" if base else request.build_absolute_uri(path)


@extend_schema_view(
    post=extend_schema(
        operation_id="portal_link_issue",
        summary="A single-use link into the traveller's privacy portal",
        description=_doc(
            PORTAL_ISSUE,
            "Call this from the airline's backend for a traveller who is signed in there, then "
            "redirect their browser to `url`. The link opens the portal once, for this traveller "
            "only, within 15 minutes; only its hash is stored. Every call issues a new link "
            "(Idempotency-Key is not honoured here: a stored reply would keep the secret).",
        ),
        parameters=[SUBJECT_PARAM, *COMMON],
        request=PortalLinkRequestSerializer,
        responses={201: PortalLinkSerializer, **_errors(400, 401, 403, 429)},
    ),
)
class PortalLinkView(SubjectView):
    required_scopes = {"POST": PORTAL_ISSUE}

    def post(self, request: Request, subject_id: str) -> Response:
        asked = PortalLinkRequestSerializer(data=request.data)
        asked.is_valid(raise_exception=True)
        link = portal_link_issue(
            subject_id=subject_id,
            issued_by=f"token:{getattr(request.auth, 'name', '')}",
        )
        body = {"url": portal_url(request, link.secret), "expires_at": link.expires_at}
        return Response(
            PortalLinkSerializer(body).data,
            status=status.HTTP_201_CREATED,
            headers={"Cache-Control": "no-store"},
        )
