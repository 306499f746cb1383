"""Typed errors for the HTTP client, one per kind of answer an agent host reacts to differently.

Every error carries the server's machine code, its human message and per-field messages, so a
host can show or log them without parsing bodies. Messages come from the server, whose write
filter never echoes a refused value.
"""

from __future__ import annotations


class MemoryApiError(Exception):
    """Base for every failure talking to the memory API."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str = "error",
        fields: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.fields = dict(fields or {})

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r})"


class AuthError(MemoryApiError):
    """401 (bad or missing token) or 403 (the token lacks the scope): fix the configuration."""


class NotFound(MemoryApiError):
    """404: no such fact (or job)."""


class Conflict(MemoryApiError):
    """412 (stale If-Match: reload and retry) or 409 (the action does not fit the state)."""


class Blocked(MemoryApiError, ValueError):
    """422 blocked_by_filter: the write filter refused the value; do not retry it as is.
    A ValueError too, as upstream's refusals are, so ported `except ValueError` code works."""


class Invalid(MemoryApiError, ValueError):
    """400, or 422 other than blocked_by_filter (e.g. idempotency_key_reused). A ValueError."""


class MemoryDisabled(Conflict):
    """409 memory_disabled: the airline switched memory off; saves are refused."""


class Throttled(MemoryApiError):
    """429: too many requests; `retry_after` is the server's hint in seconds, if it gave one."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: object) -> None:
        super().__init__(message, **kwargs)  # type: ignore[arg-type]
        self.retry_after = retry_after


class Unavailable(MemoryApiError):
    """5xx, or the server could not be reached even after the retries (`attempts` made)."""

    def __init__(self, message: str, *, attempts: int = 1, **kwargs: object) -> None:
        super().__init__(message, **kwargs)  # type: ignore[arg-type]
        self.attempts = attempts
