"""Request and response shapes of the agent API. Limits are enforced here as refusals (400 with
field messages), never silently clamped: an agent that sends 300 characters should learn that
its fact was not stored as sent. Error messages never quote the submitted text."""

from __future__ import annotations

from datetime import UTC
from typing import Any

from rest_framework import serializers

from memoryadmin.facts.models import Category
from memoryadmin_client.types import (
    KEY_MAX_LENGTH,
    SESSION_ID_MAX_LENGTH,
    TOPIC_MAX_LENGTH,
    VALUE_MAX_LENGTH,
)

MAX_FACTS_PER_WRITE = 50
RAW_SESSION_ID_MAX_LENGTH = 256  # the raw id is only hashed to a 12-hex tag, never stored
CATEGORY_MESSAGE = f"Must be one of: {', '.join(sorted(Category.values))}."


class StrictCharField(serializers.CharField):
    """Text only: DRF's CharField would quietly turn 42 or 4.2 into "42"/"4.2"."""

    default_error_messages = {
        "invalid": "Must be text.",
        "blank": "Must not be empty.",
        "max_length": "At most {max_length} characters.",
        "min_length": "At least {min_length} characters.",
        "null": "Must not be null.",
        "null_characters_not_allowed": "Must not contain NUL characters.",
    }

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class CategoryField(serializers.ChoiceField):
    default_error_messages = {"invalid_choice": CATEGORY_MESSAGE, "null": CATEGORY_MESSAGE}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=Category.choices, **kwargs)


class WireFactSerializer(serializers.Serializer):
    """A fact on the wire: the upstream MemoryFact fields and its version."""

    key = serializers.CharField(max_length=KEY_MAX_LENGTH)
    value = serializers.CharField(max_length=VALUE_MAX_LENGTH)
    category = CategoryField()
    updated_at = serializers.DateTimeField(default_timezone=UTC)
    source_session_id = serializers.CharField(
        max_length=SESSION_ID_MAX_LENGTH,
        allow_null=True,
        help_text="12-hex tag of the session that last wrote the fact (never the raw id).",
    )
    version = serializers.IntegerField(
        min_value=1,
        help_text="The fact's version (its ETag). Name it back in the turn's use receipts, "
        "so the receipt records the value the agent had.",
    )


class FactListSerializer(serializers.Serializer):
    facts = WireFactSerializer(many=True)


class FactWriteResultSerializer(FactListSerializer):
    pending_review = serializers.ListField(
        child=serializers.CharField(),
        help_text="Keys written but held for a person to review (possibly sensitive); the "
        "agent does not see them until approved.",
    )


class FactHeldSerializer(serializers.Serializer):
    key = serializers.CharField()
    status = serializers.ChoiceField(
        choices=["pending_review", "not_visible"],
        help_text="pending_review: held for review as possibly sensitive. not_visible: stored, "
        "but the traveller asked the agent not to use its memory of them.",
    )


class FactInSerializer(serializers.Serializer):
    key = StrictCharField(max_length=KEY_MAX_LENGTH, trim_whitespace=False)
    value = StrictCharField(max_length=VALUE_MAX_LENGTH, trim_whitespace=False)
    category = CategoryField(required=False, allow_null=True)
    evidence = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=1000,
        trim_whitespace=False,
        help_text="Optional: the traveller's own words behind the fact (save_memory's quote). "
        "Kept as the assistant's (never shown as the traveller's words) when at most 200 "
        "characters and allowed by the write filter; otherwise dropped, never the fact. When "
        "the host then posts the turn (POST .../turns), a quote found in the traveller's "
        "messages of it becomes their words.",
    )


class FactsPutSerializer(serializers.Serializer):
    facts = serializers.ListField(
        child=FactInSerializer(),
        max_length=MAX_FACTS_PER_WRITE,
        error_messages={
            "not_a_list": "Must be a list of facts.",
            "max_length": f"At most {MAX_FACTS_PER_WRITE} facts per request.",
        },
    )
    session_id = StrictCharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        max_length=RAW_SESSION_ID_MAX_LENGTH,
        trim_whitespace=False,
        help_text="The conversation's session id; only a 12-hex tag of it is stored.",
    )


class FactPutSerializer(serializers.Serializer):
    value = StrictCharField(max_length=VALUE_MAX_LENGTH, trim_whitespace=False)
    category = CategoryField(required=False, allow_null=True)
    session_id = StrictCharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        max_length=RAW_SESSION_ID_MAX_LENGTH,
        trim_whitespace=False,
        help_text="The conversation's session id; only a 12-hex tag of it is stored.",
    )


class SearchQuerySerializer(serializers.Serializer):
    q = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=TOPIC_MAX_LENGTH,
        trim_whitespace=False,
        help_text="Words to look for in key, value and category; empty returns every fact.",
    )


class MemoryStatusSerializer(serializers.Serializer):
    memory_enabled = serializers.BooleanField()


class PurgeGenerationSerializer(serializers.Serializer):
    purge_generation = serializers.IntegerField(min_value=0)


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    fields = serializers.DictField(child=serializers.CharField())


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()
