"""JSON bodies for the API, with a nesting limit.

Python's json module recurses once per level, so a body nested a thousand levels deep raised
RecursionError (a 500) in the parser or later in code that walks the data. No request of ours
needs more than a few levels; anything deeper is refused as malformed before a view sees it.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.utils import json

MAX_JSON_DEPTH = 32


def _too_deep(data: Any, limit: int) -> bool:
    """Iterative (no recursion of our own): True when containers nest deeper than `limit`.
    One level at a time, keeping only the containers (json.loads makes plain dicts and lists,
    so `type() is` serves): a body of 13,000 small objects is walked in a few milliseconds."""
    level = [data] if type(data) is dict or type(data) is list else []
    depth = 1
    while level:
        if depth > limit:
            return True
        deeper = []
        for value in level:
            for child in value.values() if type(value) is dict else value:
                if type(child) is dict or type(child) is list:
                    deeper.append(child)
        level, depth = deeper, depth + 1
    return False


def loads_json(text: str | bytes) -> Any:
    """json.loads that answers ParseError (400) for invalid or too deeply nested bodies."""
    try:
        data = json.loads(text, parse_constant=json.strict_constant)  # no NaN/Infinity
    except (ValueError, RecursionError) as exc:
        raise ParseError("JSON parse error.") from exc
    if _too_deep(data, MAX_JSON_DEPTH):
        raise ParseError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels.")
    return data


class SafeJSONParser(JSONParser):
    """DRF's JSONParser (same media type, same strictness) with the depth limit."""

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: dict[str, Any] | None = None,
    ) -> Any:
        raw = stream.read() if stream is not None else b""
        return loads_json(decode_body(raw, parser_context or {}))


def decode_body(raw: bytes, context: dict[str, Any]) -> str:
    """The body as text in the Content-Type's charset, refusing bytes-to-bytes codecs (e.g.
    bz2_codec) that would decompress a small body past the size limit."""
    encoding = context.get("encoding") or settings.DEFAULT_CHARSET
    try:
        "".encode(encoding)
        text = raw.decode(encoding)
    except (LookupError, UnicodeError) as exc:
        raise ParseError("The body is not valid text in its declared charset.") from exc
    if not isinstance(text, str):
        raise ParseError("Unsupported charset in the Content-Type header.")
    return text
