"""Posting a finished turn for automatic learning, and reading how its extraction went.

    POST /api/v1/subjects/{subject_id}/turns   -> 202 {"job_id", "status"}  (replay: 200)
    GET  /api/v1/jobs/{job_id}                 -> status, reason, counts, model, usage, timings

The answer never waits on the model: extraction runs in Celery after the job row is committed,
and whatever the model does, the turn itself has already been accepted. Only the session's
12-hex tag is stored, and the transcript is wiped when the job ends.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from django.conf import settings
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import renderers, serializers, status
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin.extraction import selectors as extraction_selectors
from memoryadmin.extraction import services as extraction_services
from memoryadmin.extraction.models import TURN_ID_MAX_LENGTH, ExtractionJob, JobStatus
from memoryadmin.facts.models import SUBJECT_ID_MAX_LENGTH
from memoryadmin.facts.validation import clean_subject_id
from memoryadmin_client.text import has_hidden_characters

from .auth import ServiceTokenAuthentication
from .errors import ApiError
from .models import Scope
from .parsers import decode_body, loads_json
from .permissions import scope_required
from .serializers import ErrorSerializer, StrictCharField
from .usage import UsedSerializer, take_job_uses_quietly

MAX_MESSAGES = 200
MAX_TEXT_LENGTH = 20_000
# The largest valid turn (200 x 20,000 characters) is about 12 MB of UTF-8 for CJK text: more
# than Django's global 2.5 MB request limit, which stays in force for every other endpoint.
TURN_BODY_MAX_BYTES = 16 * 1024 * 1024
SESSION_ID_MAX_LENGTH = 128
TURNS_WRITE = Scope.TURNS_WRITE.value


def _visible_id(value: str) -> str:
    """Ids are opaque but must be printable: they show up in job lists and audit reasons."""
    if has_hidden_characters(value):
        raise serializers.ValidationError("Must not contain control or invisible characters.")
    if not value.strip():
        raise serializers.ValidationError("Must not be blank.")
    return value


class TurnJSONParser(BaseParser):
    """JSON with this endpoint's own size limit. (DRF's JSONParser reads `request.body`, which
    enforces the global limit; this reads the stream, at most TURN_BODY_MAX_BYTES of it.)"""

    media_type = "application/json"
    renderer_class = renderers.JSONRenderer

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: dict[str, Any] | None = None,
    ) -> Any:
        context = parser_context or {}
        request = context.get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > TURN_BODY_MAX_BYTES:
            raise _too_large()
        raw = stream.read(TURN_BODY_MAX_BYTES + 1) if stream is not None else b""
        if len(raw) > TURN_BODY_MAX_BYTES:
            raise _too_large()
        return loads_json(decode_body(raw, context))


def _too_large() -> ApiError:
    return ApiError(
        status_code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        code="request_too_large",
        message=f"The request body is larger than {TURN_BODY_MAX_BYTES} bytes.",
    )


# --- serializers ---------------------------------------------------------------------------------


class TurnMessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=["user", "assistant"])
    text = StrictCharField(
        max_length=MAX_TEXT_LENGTH,
        allow_blank=True,
        trim_whitespace=False,
        help_text="What was said, as plain text.",
    )


class TurnSerializer(serializers.Serializer):
    session_id = StrictCharField(
        max_length=SESSION_ID_MAX_LENGTH,
        trim_whitespace=False,
        help_text="The conversation's id. Only its 12-hex SHA-256 tag is stored.",
    )
    turn_id = StrictCharField(
        max_length=TURN_ID_MAX_LENGTH,
        trim_whitespace=False,
        help_text="Unique within the session; posting the same turn again returns the same job.",
    )
    messages = serializers.ListField(
        child=TurnMessageSerializer(),
        min_length=1,
        max_length=MAX_MESSAGES,
        help_text="The turn's messages in order, oldest first.",
    )
    used = UsedSerializer(
        required=False,
        help_text="Optional: which facts the agent had in this turn (see POST .../usage).",
    )

    def validate_session_id(self, value: str) -> str:
        return _visible_id(value)

    def validate_turn_id(self, value: str) -> str:
        return _visible_id(value)


class TurnAcceptedSerializer(serializers.Serializer):
    job_id = serializers.UUIDField(help_text="The job's id: random, readable only by this host.")
    status = serializers.ChoiceField(
        choices=JobStatus.choices,
        help_text="What really happened: `queued` also while the broker is unreachable (the job "
        "is sent when it is back); a finished status when the job already ran.",
    )


class JobCountsSerializer(serializers.Serializer):
    proposed = serializers.IntegerField(help_text="record_fact calls the model made.")
    stored = serializers.IntegerField(help_text="New facts written.")
    updated = serializers.IntegerField(help_text="Facts already held that got a new value.")
    duplicates = serializers.IntegerField(help_text="Proposals that restated a held fact.")
    blocked = serializers.IntegerField(help_text="Refused by the write filter.")
    sent_to_review = serializers.IntegerField(help_text="Held for review as possibly sensitive.")
    invalid = serializers.IntegerField(help_text="Malformed proposals.")
    cut_by_cap = serializers.IntegerField(help_text="Dropped by the max-new-facts cap.")


class JobUsageSerializer(serializers.Serializer):
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()


class JobSerializer(serializers.Serializer):
    job_id = serializers.UUIDField()
    subject_id = serializers.CharField()
    turn_id = serializers.CharField()
    status = serializers.ChoiceField(choices=JobStatus.choices)
    reason = serializers.CharField(
        help_text="Why the job was skipped, failed, discarded or is being retried; never a value."
    )
    counts = JobCountsSerializer()
    model = serializers.CharField(help_text="The model that answered, once it has.")
    usage = JobUsageSerializer()
    attempts = serializers.IntegerField(help_text="Model calls tried (retries included).")
    queued_at = serializers.DateTimeField(default_timezone=UTC)
    started_at = serializers.DateTimeField(allow_null=True, default_timezone=UTC)
    finished_at = serializers.DateTimeField(allow_null=True, default_timezone=UTC)


def job_body(job: ExtractionJob) -> dict[str, Any]:
    """Everything about the job except the transcript."""
    return {
        "job_id": str(job.public_id),
        "subject_id": job.subject_id,
        "turn_id": job.turn_id,
        "status": job.status,
        "reason": job.reason,
        "counts": {name: getattr(job, name) for name in JobCountsSerializer().fields},
        "model": job.model,
        "usage": {"input_tokens": job.input_tokens, "output_tokens": job.output_tokens},
        "attempts": job.attempts,
        "queued_at": job.queued_at.isoformat(),
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }


def _used(used: dict[str, Any] | None) -> dict[str, list[Any]] | None:
    """The `used` member as stored on the job (validated keys, with the versions the host
    named, as posted), None when empty."""
    if not used or not (used.get("injected") or used.get("recalled")):
        return None
    return {
        "injected": list(used.get("injected") or ()),
        "recalled": list(used.get("recalled") or ()),
    }


def poster_label(request: Request) -> str:
    """Who posted a turn, as stored on its job: the token's name, so every token of one agent
    host (a rotated secret, say) reads the jobs of the others."""
    return f"token:{request.auth.name}"


# --- views ---------------------------------------------------------------------------------------


def _errors(**descriptions: str) -> dict[int, OpenApiResponse]:
    return {
        int(code.removeprefix("e")): OpenApiResponse(ErrorSerializer, description=text)
        for code, text in descriptions.items()
    }


_COMMON_ERRORS = {
    "e401": "Missing, unknown or revoked token.",
    "e403": "The token lacks the `turns:write` scope (`insufficient_scope`).",
    "e429": "Too many requests for this token (`throttled`); see `Retry-After`.",
}


class TurnsView(APIView):
    authentication_classes = [ServiceTokenAuthentication]
    parser_classes = [TurnJSONParser]
    permission_classes = [scope_required(TURNS_WRITE)]

    @extend_schema(
        operation_id="turns_create",
        tags=["turns"],
        summary="Post a finished turn for automatic learning",
        description=(
            "Queues extraction of durable facts from one finished turn and answers at once: the "
            "model is called later, and a model outage never fails this request. Posting the "
            "same (subject, session, turn_id) again returns the existing job with 200. Learned "
            "facts are written with origin `extraction`; sensitive ones wait for review.\n\n"
            "Requires a service token with scope `turns:write`."
        ),
        parameters=[
            OpenApiParameter(
                "subject_id",
                {"type": "string", "minLength": 1, "maxLength": SUBJECT_ID_MAX_LENGTH},
                OpenApiParameter.PATH,
                description="The traveller's opaque id (no spaces or control characters).",
            )
        ],
        request=TurnSerializer,
        responses={
            202: OpenApiResponse(TurnAcceptedSerializer, description="A new job was queued."),
            200: OpenApiResponse(
                TurnAcceptedSerializer, description="This turn was posted before: its job."
            ),
            **_errors(
                e400="Invalid subject id or body; per-field messages in `fields`.",
                e413="The body is larger than 16 MiB (`request_too_large`).",
                e415="The body is not JSON.",
                **_COMMON_ERRORS,
            ),
        },
    )
    def post(self, request: Request, subject_id: str) -> Response:
        clean_subject_id(subject_id)
        body = TurnSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        job, created = extraction_services.turn_submit(
            subject_id=subject_id,
            session_id=data["session_id"],
            turn_id=data["turn_id"],
            messages=[dict(message) for message in data["messages"]],
            created_by_label=poster_label(request),
            used=_used(data.get("used")),
        )
        eager = settings.CELERY_TASK_ALWAYS_EAGER
        if created and job.used and job.status == JobStatus.SKIPPED and eager:
            # No task will run for a skipped job, and without a broker there is no beat to
            # sweep its receipts: recorded here, as everything is inline in that mode.
            take_job_uses_quietly(job.pk)
        return Response(
            {"job_id": str(job.public_id), "status": job.status},
            status=status.HTTP_202_ACCEPTED if created else status.HTTP_200_OK,
        )


class JobView(APIView):
    authentication_classes = [ServiceTokenAuthentication]
    permission_classes = [scope_required(TURNS_WRITE)]

    @extend_schema(
        operation_id="jobs_retrieve",
        tags=["turns"],
        summary="How a posted turn's extraction went",
        description=(
            "Status (`queued`, `running`, `succeeded`, `skipped`, `failed`), the reason for a "
            "skip, failure, discard or pending retry, what happened to each proposal, the model "
            "and its token usage, and timings. The transcript is never returned (and is wiped "
            "when the job ends). Only tokens with the name of the token that posted the turn can "
            "read its job; for any other the job does not exist (404)."
            "\n\nRequires a service token with scope `turns:write`."
        ),
        responses={
            200: JobSerializer,
            **_errors(
                e404="No job with this id that this token's host posted (`not_found`).",
                **_COMMON_ERRORS,
            ),
        },
    )
    def get(self, request: Request, job_id: str) -> Response:
        job = extraction_selectors.job_for_poster(job_id, created_by_label=poster_label(request))
        if job is None:
            raise ApiError(
                status_code=status.HTTP_404_NOT_FOUND,
                code="not_found",
                message="There is no extraction job with this id.",
            )
        return Response(job_body(job))


urlpatterns = [
    path("subjects/<str:subject_id>/turns", TurnsView.as_view(), name="api-turns"),
    path("jobs/<str:job_id>", JobView.as_view(), name="api-job"),
]
