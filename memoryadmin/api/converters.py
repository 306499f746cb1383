"""Path converters for the agent API.

Both accept any non-empty segment without "/" (unicode keys included) and leave validation to the
views, so a bad id is a 400 with a field message rather than an anonymous 404. The search route is
listed before the `{key}` route, so `/facts/search` is the search, not a fact called "search".
"""

from __future__ import annotations


class _Segment:
    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class SubjectIdConverter(_Segment):
    """A traveller's opaque id (validated to 128 characters by the view)."""


class FactKeyConverter(_Segment):
    """A fact key, e.g. seat_preference or 座位偏好 (validated to 64 characters by the view)."""
