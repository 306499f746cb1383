"""The agent-facing endpoints under /api/v1/subjects/{subject_id}/.

Views stay thin: check who is asking (token + scope), validate the request, call one service or
selector, shape the answer. Every write is recorded with `Actor.agent(token)`, so the history
names the token that wrote it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin.facts import selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactBlocked, FactConflict, FactInvalid, FactNotFound
from memoryadmin.facts.models import SUBJECT_ID_MAX_LENGTH, FactStatus
from memoryadmin.facts.selectors import AgentFact
from memoryadmin.facts.services import FactState
from memoryadmin.facts.validation import clean_subject_id, normalize_key, session_tag
from memoryadmin_client.types import KEY_MAX_LENGTH

from . import serializers as s
from .errors import ApiError
from .fastpath_drf import LeanGetMixin
from .idempotency import HEADER as IDEMPOTENCY_HEADER
from .idempotency import REPLAYED_HEADER, run_idempotent
from .models import Scope
from .permissions import HasScope

READ = (Scope.MEMORY_READ.value,)
WRITE = (Scope.MEMORY_WRITE.value,)
_ETAG_VERSION = re.compile(r'"([0-9]{1,9})"')

# --- helpers -------------------------------------------------------------------------------------


def wire_fact(fact: AgentFact | FactState) -> dict[str, Any]:
    """The upstream shape {key, value, category, updated_at, source_session_id} and the
    fact's `version` (the host names it back in its use receipts). Built directly
    (JSON types, ISO time as pydantic writes it) on the agent's hot path."""
    updated_at = fact.updated_at.isoformat()
    return {
        "key": fact.key,
        "value": fact.value,
        # Here, not last: the order is jsonb's (shorter names first), so a replayed answer
        # (the idempotency record keeps it as jsonb) is byte for byte the first one.
        "version": fact.version,
        "category": fact.category,
        "updated_at": updated_at[:-6] + "Z" if updated_at.endswith("+00:00") else updated_at,
        "source_session_id": fact.source_session_id or None,
    }


def wire_facts(facts: Iterable[AgentFact | FactState]) -> list[dict[str, Any]]:
    return [wire_fact(fact) for fact in facts]


def etag(fact: AgentFact | FactState) -> str:
    return f'"{fact.version}"'


def agent_actor(request: Request) -> Actor:
    return Actor.agent(request.auth)


def clean_path_key(raw: str) -> str:
    """The key from the URL, normalized like any key; refused (not clamped) when too long."""
    if len(raw) > KEY_MAX_LENGTH:
        raise FactInvalid(
            "The key is too long.", fields={"key": f"At most {KEY_MAX_LENGTH} characters."}
        )
    if any(unicodedata.category(ch) == "Cc" for ch in raw):
        raise FactInvalid(
            "The key contains control characters.",
            fields={"key": "Must not contain control characters."},
        )
    key = normalize_key(raw)
    if not key:
        raise FactInvalid(
            "The key is empty once cleaned.",
            fields={"key": "Use a short snake_case topic like seat_preference."},
        )
    return key


def expected_version(request: Request, current: AgentFact | None) -> int | None:
    """The version an If-Match header insists on, or None when the write is unconditional.

    `current` is the fact as the agent sees it. The service checks the version again inside its
    transaction, so a change between this read and the write is still caught."""
    header = request.headers.get("If-Match")
    if header is None:
        return None
    stale = FactConflict(
        "The fact changed since you read it (If-Match did not match); fetch it and retry."
    )
    if header.strip() == "*":
        if current is None:
            raise stale
        return current.version
    versions = {
        int(match.group(1))
        for part in header.split(",")
        if (match := _ETAG_VERSION.fullmatch(part.strip()))
    }
    if current is None or current.version not in versions:
        raise stale
    return current.version


def _single_fact_fields(exc: FactInvalid | FactBlocked) -> None:
    """The single-fact endpoint names fields as the request does ("value", not "facts[0].value")."""
    exc.fields = {name.removeprefix("facts[0]."): msg for name, msg in exc.fields.items()}


# --- schema helpers ------------------------------------------------------------------------------

_ERROR_DESCRIPTIONS = {
    400: "Invalid request: malformed JSON (`malformed_json`) or invalid fields (`invalid`, "
    "with per-field messages in `fields`).",
    401: "Missing, unknown or revoked token (`not_authenticated`, `authentication_failed`). "
    "Sent with `WWW-Authenticate: Bearer`.",
    403: "The token lacks the scope this operation needs (`insufficient_scope`).",
    404: "Not found (`not_found`); a fact held for review answers `pending_review`.",
    409: "The fact is not in a state this action applies to (`invalid_state`), the traveller "
    "paused learning (`learning_paused`), or memory is switched off (`memory_disabled`).",
    412: "If-Match did not match the fact's current ETag (`precondition_failed`); nothing was "
    "written.",
    415: "The body is not JSON (`unsupported_media_type`).",
    422: "Refused by the memory write filter (`blocked_by_filter`; the message never repeats the "
    "value), or an Idempotency-Key reused for a different request (`idempotency_key_reused`).",
    429: "Too many requests for this token (`throttled`); see `Retry-After`.",
    503: "The write filter has an invalid blocked pattern and refuses every save until a "
    "privacy admin fixes it (`write_filter_misconfigured`); `/healthz` reports it too.",
}


def _errors(*codes: int) -> dict[int, OpenApiResponse]:
    return {
        code: OpenApiResponse(s.ErrorSerializer, description=_ERROR_DESCRIPTIONS[code])
        for code in codes
    }


READ_ERRORS = (400, 401, 403, 404, 429)
WRITE_ERRORS = (400, 401, 403, 404, 415, 422, 429)
# A save can also meet memory switched off (409) or a write filter that fails closed (503).
SAVE_ERRORS = (*WRITE_ERRORS, 409, 503)

SUBJECT_PARAM = OpenApiParameter(
    "subject_id",
    {"type": "string", "minLength": 1, "maxLength": SUBJECT_ID_MAX_LENGTH},
    OpenApiParameter.PATH,
    description="The traveller's opaque id from the airline (no spaces or control characters).",
)
KEY_PARAM = OpenApiParameter(
    "key",
    {"type": "string", "minLength": 1, "maxLength": KEY_MAX_LENGTH},
    OpenApiParameter.PATH,
    description="The fact's key, e.g. `seat_preference`; normalized to snake_case.",
)
IDEMPOTENCY_PARAM = OpenApiParameter(
    IDEMPOTENCY_HEADER,
    {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[ -~]*[!-~][ -~]*$"},
    OpenApiParameter.HEADER,
    required=False,
    description="Retry-safe writes: a repeat within 24 hours with the same token and key returns "
    "the first response (with `Idempotent-Replayed: true`) and writes nothing.",
)
IF_MATCH_PARAM = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=False,
    description='Only write if the fact is still at this ETag (e.g. `"3"`); otherwise 412.',
)
ETAG_HEADER = OpenApiParameter(
    "ETag",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    response=[200, 201],
    description='The fact\'s version, e.g. `"3"`; send it back in If-Match.',
)


def replayed(*codes: int) -> OpenApiParameter:
    return OpenApiParameter(
        REPLAYED_HEADER,
        OpenApiTypes.STR,
        OpenApiParameter.HEADER,
        response=list(codes),
        description="`true` when this is the stored response to an earlier request with the "
        "same Idempotency-Key.",
    )


WWW_AUTHENTICATE = OpenApiParameter(
    "WWW-Authenticate",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    response=[401],
    description="`Bearer realm=...`: this API wants a bearer token.",
)
RETRY_AFTER = OpenApiParameter(
    "Retry-After",
    OpenApiTypes.INT,
    OpenApiParameter.HEADER,
    response=[429],
    description="Seconds to wait before retrying.",
)
COMMON = [WWW_AUTHENTICATE, RETRY_AFTER]


def _doc(scope: Sequence[str], text: str) -> str:
    return f"{text}\n\nRequires a service token with scope `{', '.join(scope)}`."


# --- views ---------------------------------------------------------------------------------------


class SubjectView(APIView):
    """Base: token + per-method scope, then the subject id from the URL is validated (400 with a
    field message, before anything is read or written)."""

    permission_classes = [HasScope]
    required_scopes: dict[str, tuple[str, ...]] = {}
    query_params: frozenset[str] = frozenset()

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        clean_subject_id(kwargs["subject_id"])
        unknown = sorted(set(request.query_params) - self.query_params)
        if unknown:
            # A misspelt parameter (say `query=` for `q=`) would otherwise be silently ignored.
            raise FactInvalid(
                "Unknown query parameter(s).",
                fields={name[:100]: "Unknown parameter." for name in unknown[:10]},
            )


@extend_schema_view(
    get=extend_schema(
        operation_id="facts_list",
        summary="The traveller's facts",
        description=_doc(
            READ,
            "Every fact the agent may use, in the order the facts were first written (an update "
            "keeps a fact's place), as upstream's store returns them. Empty when memory is "
            "switched off or the traveller paused its use.",
        ),
        parameters=[SUBJECT_PARAM, *COMMON],
        responses={200: s.FactListSerializer, **_errors(*READ_ERRORS)},
    ),
    put=extend_schema(
        operation_id="facts_upsert",
        summary="Save facts (replace by key)",
        description=_doc(
            WRITE,
            "Each fact replaces any fact with the same key. Up to 50 facts; keys up to 64 and "
            "values up to 200 characters (longer is refused, not cut). Facts touching sensitive "
            "topics are held for review and listed in `pending_review`. Returns the agent's view "
            "after the write.",
        ),
        parameters=[SUBJECT_PARAM, IDEMPOTENCY_PARAM, replayed(200), *COMMON],
        request=s.FactsPutSerializer,
        responses={200: s.FactWriteResultSerializer, **_errors(*SAVE_ERRORS)},
    ),
)
class FactsView(LeanGetMixin, SubjectView):
    required_scopes = {"GET": READ, "PUT": WRITE}

    def lean_data(self, subject_id: str) -> dict[str, Any]:
        return {"facts": wire_facts(selectors.facts_for_agent(subject_id))}

    def get(self, request: Request, subject_id: str) -> Response:
        return Response(self.lean_data(subject_id))

    def put(self, request: Request, subject_id: str) -> Response:
        body = s.FactsPutSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data

        # The reply is the agent's whole view only for a token that may read it; a write-only
        # token gets back what it wrote (as committed, when the agent can see it), nothing else.
        may_read = request.auth.has_scopes(*READ)

        def perform() -> Response:
            result = services.fact_upsert(
                subject_id=subject_id,
                facts=[
                    services.FactDraft(
                        fact["key"],
                        fact["value"],
                        fact.get("category"),
                        evidence=fact.get("evidence", ""),
                    )
                    for fact in data["facts"]
                ],
                actor=agent_actor(request),
                reason="saved by the agent",
                session_tag=session_tag(data.get("session_id")),
                agent_view=may_read,  # read inside the write's transaction: this write's state
            )
            facts = (
                result.agent_facts
                if may_read
                else [state for state in result.states.values() if state.agent_visible]
            )
            return Response({"facts": wire_facts(facts), "pending_review": result.sent_to_review})

        return run_idempotent(request, subject_id=subject_id, perform=perform)


@extend_schema_view(
    get=extend_schema(
        operation_id="facts_search",
        summary="Recall facts on a topic",
        description=_doc(
            READ,
            "Facts where any word of `q` appears in the key, value or category (case-"
            "insensitive), in the order they were first written. An empty `q` returns every "
            "fact.",
        ),
        parameters=[SUBJECT_PARAM, s.SearchQuerySerializer, *COMMON],
        responses={200: s.FactListSerializer, **_errors(*READ_ERRORS)},
    ),
)
class FactSearchView(SubjectView):
    required_scopes = {"GET": READ}
    query_params = frozenset({"q"})

    def get(self, request: Request, subject_id: str) -> Response:
        query = s.SearchQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        facts = selectors.facts_search(subject_id, query.validated_data.get("q", ""))
        return Response({"facts": wire_facts(facts)})


@extend_schema_view(
    get=extend_schema(
        operation_id="fact_get",
        summary="One fact",
        description=_doc(READ, "The fact with this key, with its version as ETag."),
        parameters=[SUBJECT_PARAM, KEY_PARAM, ETAG_HEADER, *COMMON],
        responses={200: s.WireFactSerializer, **_errors(*READ_ERRORS)},
    ),
    put=extend_schema(
        operation_id="fact_put",
        summary="Save one fact",
        description=_doc(
            WRITE,
            "Create (201) or replace (200) the fact with this key; like every save, an omitted "
            "category means `preference`. With If-Match, the write "
            "happens only if the fact is still at that ETag (412 otherwise, nothing written). A "
            "fact held for review, or not visible to the agent, answers 202.",
        ),
        parameters=[
            SUBJECT_PARAM,
            KEY_PARAM,
            IF_MATCH_PARAM,
            IDEMPOTENCY_PARAM,
            ETAG_HEADER,
            replayed(200, 201, 202),
            *COMMON,
        ],
        request=s.FactPutSerializer,
        responses={
            200: s.WireFactSerializer,
            201: s.WireFactSerializer,
            202: OpenApiResponse(
                s.FactHeldSerializer,
                description="Stored, but not visible to "
                "the agent (held for review, or memory use paused).",
            ),
            **_errors(*SAVE_ERRORS, 412),
        },
    ),
    delete=extend_schema(
        operation_id="fact_delete",
        summary="Forget one fact",
        description=_doc(
            WRITE,
            "Erase the fact (its past values are redacted from the history too). 404 when there "
            "was none. If-Match makes the delete conditional.",
        ),
        parameters=[
            SUBJECT_PARAM,
            KEY_PARAM,
            IF_MATCH_PARAM,
            IDEMPOTENCY_PARAM,
            replayed(204),
            *COMMON,
        ],
        responses={204: None, **_errors(*WRITE_ERRORS, 412)},
    ),
)
class FactDetailView(SubjectView):
    required_scopes = {"GET": READ, "PUT": WRITE, "DELETE": WRITE}

    def get(self, request: Request, subject_id: str, key: str) -> Response:
        key = clean_path_key(key)
        fact = selectors.fact_for_agent(subject_id, key)
        if fact is None:
            if selectors.fact_waiting_for_review(subject_id, key):  # the miss path only
                raise ApiError(
                    status_code=404,
                    code="pending_review",
                    message="This fact is waiting for a person to review it; it can be read "
                    "once it is approved.",
                )
            raise FactNotFound("There is no fact with this key.")
        return Response(wire_fact(fact), headers={"ETag": etag(fact)})

    def put(self, request: Request, subject_id: str, key: str) -> Response:
        key = clean_path_key(key)
        body = s.FactPutSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data

        def perform() -> Response:
            version = None
            if "If-Match" in request.headers:
                version = expected_version(request, selectors.fact_for_agent(subject_id, key))
            try:
                result = services.fact_upsert(
                    subject_id=subject_id,
                    facts=[services.FactDraft(key, data["value"], data.get("category"))],
                    actor=agent_actor(request),
                    reason="saved by the agent",
                    session_tag=session_tag(data.get("session_id")),
                    expected_versions=None if version is None else {key: version},
                )
            except (FactInvalid, FactBlocked) as exc:
                _single_fact_fields(exc)
                raise
            fact = result.states[key]  # what this write committed, not a later writer's
            if not fact.agent_visible:
                pending = fact.status == FactStatus.PENDING_REVIEW
                return Response(
                    {"key": key, "status": "pending_review" if pending else "not_visible"},
                    status=status.HTTP_202_ACCEPTED,
                )
            code = status.HTTP_201_CREATED if key in result.created else status.HTTP_200_OK
            return Response(wire_fact(fact), status=code, headers={"ETag": etag(fact)})

        return run_idempotent(request, subject_id=subject_id, perform=perform)

    def delete(self, request: Request, subject_id: str, key: str) -> Response:
        key = clean_path_key(key)

        def perform() -> Response:
            version = None
            if "If-Match" in request.headers:
                version = expected_version(request, selectors.fact_for_agent(subject_id, key))
            deleted = services.fact_delete(
                subject_id=subject_id,
                key=key,
                actor=agent_actor(request),
                reason="deleted by the agent",
                expected_version=version,
            )
            if not deleted:
                raise FactNotFound("There is no fact with this key.")
            return Response(status=status.HTTP_204_NO_CONTENT)

        return run_idempotent(request, subject_id=subject_id, perform=perform)


@extend_schema_view(
    get=extend_schema(
        operation_id="tier_one",
        summary="Facts to inject into every turn",
        description=_doc(
            READ,
            "Every constraint in the order first written, then the other facts newest change "
            "first, up to the configured cap (constraints may exceed it). Sensitive facts are "
            "never included; recall them with search.",
        ),
        parameters=[SUBJECT_PARAM, *COMMON],
        responses={200: s.FactListSerializer, **_errors(*READ_ERRORS)},
    ),
)
class TierOneView(LeanGetMixin, SubjectView):
    required_scopes = {"GET": READ}

    def lean_data(self, subject_id: str) -> dict[str, Any]:
        return {"facts": wire_facts(selectors.tier_one(subject_id))}

    def get(self, request: Request, subject_id: str) -> Response:
        return Response(self.lean_data(subject_id))


@extend_schema_view(
    post=extend_schema(
        operation_id="subject_clear",
        summary="Forget everything about the traveller",
        description=_doc(
            WRITE,
            "Erase every fact and bump the purge generation (even when there was nothing), so "
            "that an extraction already in flight discards its batch.",
        ),
        parameters=[SUBJECT_PARAM, IDEMPOTENCY_PARAM, replayed(200), *COMMON],
        request=None,
        responses={200: s.PurgeGenerationSerializer, **_errors(*WRITE_ERRORS)},
    ),
)
class ClearView(SubjectView):
    required_scopes = {"POST": WRITE}

    def post(self, request: Request, subject_id: str) -> Response:
        def perform() -> Response:
            generation = services.subject_clear(
                subject_id=subject_id, actor=agent_actor(request), reason="cleared by the agent"
            )
            return Response({"purge_generation": generation})

        return run_idempotent(request, subject_id=subject_id, perform=perform)


@extend_schema_view(
    get=extend_schema(
        operation_id="purge_generation",
        summary="How many times the traveller's memory was cleared",
        description=_doc(READ, "0 for a traveller never cleared (or never seen)."),
        parameters=[SUBJECT_PARAM, *COMMON],
        responses={200: s.PurgeGenerationSerializer, **_errors(*READ_ERRORS)},
    ),
)
class PurgeGenerationView(SubjectView):
    required_scopes = {"GET": READ}

    def get(self, request: Request, subject_id: str) -> Response:
        return Response({"purge_generation": selectors.purge_generation(subject_id)})


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_status",
        summary="Is memory switched on?",
        description=_doc(
            READ,
            "`memory_enabled` is the airline's switch. When it is off, every read answers "
            "with no facts and every save is refused with 409 `memory_disabled`; the agent's "
            "tools then say that memory is not enabled.",
        ),
        parameters=[*COMMON],
        responses={200: s.MemoryStatusSerializer, **_errors(400, 401, 403, 429)},
    ),
)
class MemoryStatusView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": READ}

    def get(self, request: Request) -> Response:
        return Response({"memory_enabled": selectors.memory_enabled()})
