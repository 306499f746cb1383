"""Use receipts from the agent host: which facts it had in which turn.

    POST /api/v1/subjects/{subject_id}/usage   -> 202 {"recorded": n}

Scope `memory:read` (a host that may read facts may say it used them). One turn
(`session_id`, `turn_id`, `injected`, `recalled`; each item a key, or `{"key", "version"}` with
the fact's version the host read, the receipt otherwise taking the version current at recording
and marking it so) or a batch of them (`turns`: [...], what the
client sends after the turn); one SELECT and one COPY whatever the size. Unknown keys are
ignored, and a database hiccup is logged and answered 202 too: a receipt never fails the turn.
A malformed body is a 400 with field messages, like every other endpoint.

The `used` member of POST .../turns is not written here: it rides on the turn's job row and is
recorded by the job's task (or the beat sweep), so the request writes nothing more for it.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError, transaction
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from memoryadmin.usage.models import TURN_ID_MAX_LENGTH
from memoryadmin.usage.services import (
    MAX_KEYS_PER_TURN,
    MAX_VERSION,
    TurnUse,
    uses_record,
    uses_take_from_jobs,
)
from memoryadmin_client.types import KEY_MAX_LENGTH

from .serializers import StrictCharField
from .views import READ, SUBJECT_PARAM, SubjectView, _doc, _errors

logger = logging.getLogger(__name__)

MAX_TURNS_PER_POST = 1000
SESSION_ID_MAX_LENGTH = 128


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "maxLength": KEY_MAX_LENGTH * 2},
            {
                "type": "object",
                "properties": {
                    "key": {"type": "string", "maxLength": KEY_MAX_LENGTH * 2},
                    "version": {"type": "integer", "minimum": 1, "nullable": True},
                },
                "required": ["key"],
                "additionalProperties": False,
            },
        ]
    }
)
class UsedItemField(serializers.Field):
    """A key, or {"key": ..., "version": n}: the fact's version the host saw (from its read:
    `version` of a fact on the wire). Without a version the receipt takes the current one."""

    default_error_messages = {
        "invalid": 'Must be a key, or {{"key": ..., "version": n}}.',
        "version": "The version must be a whole number from 1.",
    }

    def __init__(self, **kwargs: Any) -> None:
        self.key = StrictCharField(max_length=KEY_MAX_LENGTH * 2)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str):
            return self.key.run_validation(data)
        if not isinstance(data, dict) or set(data) - {"key", "version"} or "key" not in data:
            self.fail("invalid")
        key = self.key.run_validation(data["key"])
        version = data.get("version")
        if version is None:
            return key
        if type(version) is not int or not 0 < version <= MAX_VERSION:
            self.fail("version")
        return {"key": key, "version": version}

    def to_representation(self, value: Any) -> Any:
        return value


def _keys(help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=UsedItemField(),
        required=False,
        default=list,
        max_length=MAX_KEYS_PER_TURN,
        help_text=help_text,
    )


class UsedSerializer(serializers.Serializer):
    """The `used` member of a posted turn."""

    injected = _keys(
        "The facts given to the agent in its prompt this turn: each a key, or "
        '{"key": ..., "version": n} with the version the read returned.'
    )
    recalled = _keys(
        'The facts a memory tool returned this turn: each a key, or {"key": ..., "version": n}.'
    )


class TurnUseSerializer(UsedSerializer):
    session_id = StrictCharField(
        max_length=SESSION_ID_MAX_LENGTH,
        trim_whitespace=False,
        help_text="The conversation; only its 12-hex tag is stored.",
    )
    turn_id = StrictCharField(max_length=TURN_ID_MAX_LENGTH, trim_whitespace=False)


class UsageSerializer(serializers.Serializer):
    """One turn inline, or `turns`: many."""

    session_id = StrictCharField(
        max_length=SESSION_ID_MAX_LENGTH, required=False, trim_whitespace=False
    )
    turn_id = StrictCharField(max_length=TURN_ID_MAX_LENGTH, required=False, trim_whitespace=False)
    injected = _keys('Given in the prompt: keys, or {"key": ..., "version": n}.')
    recalled = _keys('Returned by a memory tool: keys, or {"key": ..., "version": n}.')
    turns = serializers.ListField(
        child=TurnUseSerializer(), required=False, max_length=MAX_TURNS_PER_POST
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "turns" not in attrs and not ("session_id" in attrs and "turn_id" in attrs):
            raise serializers.ValidationError(
                {"turn_id": "Give session_id and turn_id, or a list of turns."}
            )
        return attrs


class UsageAcceptedSerializer(serializers.Serializer):
    recorded = serializers.IntegerField(
        help_text="Receipts written (keys the traveller has no fact under are ignored)."
    )


def _plain_turns(data: Any) -> list[TurnUse] | None:
    """The common, valid body read without DRF's per-field machinery (20,000 keys are 20,000
    field validations): ids and keys that are strings within their limits. None when anything
    is off, and the serializer then says what, field by field."""
    if not isinstance(data, dict) or set(data) - _FIELDS:
        return None
    inline = ("session_id" in data) + ("turn_id" in data)
    if inline == 1 or (not inline and "turns" not in data):
        return None
    turns = list(data.get("turns") or []) if isinstance(data.get("turns", []), list) else None
    if turns is None or len(turns) > MAX_TURNS_PER_POST:
        return None
    if inline:
        turns.append(data)
    uses = []
    for turn in turns:
        if not isinstance(turn, dict):
            return None
        session, turn_id = turn.get("session_id"), turn.get("turn_id")
        injected, recalled = turn.get("injected", []), turn.get("recalled", [])
        if not (
            isinstance(session, str)
            and 0 < len(session) <= SESSION_ID_MAX_LENGTH
            and isinstance(turn_id, str)
            and 0 < len(turn_id) <= TURN_ID_MAX_LENGTH
            and isinstance(injected, list)
            and isinstance(recalled, list)
            and len(injected) <= MAX_KEYS_PER_TURN
            and len(recalled) <= MAX_KEYS_PER_TURN
            and all(map(_plain_item, injected))
            and all(map(_plain_item, recalled))
            and "\x00" not in session
            and "\x00" not in turn_id
        ):
            return None
        uses.append(TurnUse(session, turn_id, injected, recalled))
    return uses


_FIELDS = frozenset({"session_id", "turn_id", "injected", "recalled", "turns"})
_ITEM_FIELDS = frozenset({"key", "version"})


def _plain_item(item: Any) -> bool:
    """A key within its limits, or {"key", "version"} with such a key and a version from 1
    (the serializer answers anything else, with its message)."""
    if type(item) is dict:
        if item.keys() != _ITEM_FIELDS:
            return False
        version = item["version"]
        if type(version) is not int or not 0 < version <= MAX_VERSION:
            return False
        item = item["key"]
    return type(item) is str and 0 < len(item) <= KEY_MAX_LENGTH * 2 and "\x00" not in item


def turn_uses_from(data: dict[str, Any]) -> list[TurnUse]:
    turns = list(data.get("turns") or [])
    if "session_id" in data and "turn_id" in data:
        turns.append(data)
    return [
        TurnUse(
            session_id=turn["session_id"],
            turn_id=turn["turn_id"],
            injected=turn.get("injected") or (),
            recalled=turn.get("recalled") or (),
        )
        for turn in turns
    ]


def record_quietly(subject_id: str, uses: list[TurnUse]) -> int:
    """Record, but never let a receipt fail the request that carries it."""
    try:
        with transaction.atomic():  # a savepoint inside a caller's: a failure spoils nothing
            return uses_record(subject_id=subject_id, uses=uses)
    except DatabaseError as exc:
        logger.warning("use receipts for a turn not recorded: %s", type(exc).__name__)
        return 0


def take_job_uses_quietly(job_id: int) -> None:
    """The receipts a posted turn carried, recorded now (`record_quietly`'s promise)."""
    try:
        with transaction.atomic():
            uses_take_from_jobs(job_id=job_id)
    except DatabaseError as exc:
        logger.warning("use receipts of a posted turn not recorded: %s", type(exc).__name__)


class UsageView(SubjectView):
    required_scopes = {"POST": READ}

    @extend_schema(
        operation_id="usage_create",
        tags=["usage"],
        summary="Report which facts the agent had in a turn",
        description=_doc(
            READ,
            "Append-only receipts (injected into the prompt, recalled by a tool) per turn, "
            "shown to staff and to the traveller. Unknown keys are ignored; never fails the "
            "turn.",
        ),
        parameters=[SUBJECT_PARAM],
        request=UsageSerializer,
        responses={
            202: OpenApiResponse(UsageAcceptedSerializer, description="Recorded."),
            **_errors(400, 401, 403, 415, 429),
        },
    )
    def post(self, request: Request, subject_id: str) -> Response:
        uses = _plain_turns(request.data)
        if uses is None:
            body = UsageSerializer(data=request.data)
            body.is_valid(raise_exception=True)
            uses = turn_uses_from(body.validated_data)
        recorded = record_quietly(subject_id, uses)
        return Response({"recorded": recorded}, status=status.HTTP_202_ACCEPTED)
