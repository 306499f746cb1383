"""Old path of `memoryadmin_client.errors` (the API's errors as exceptions):
the same objects, re-exported."""

from memoryadmin_client.errors import (
    AuthError,
    Blocked,
    Conflict,
    Invalid,
    MemoryApiError,
    MemoryDisabled,
    NotFound,
    Throttled,
    Unavailable,
)

__all__ = [
    "AuthError",
    "Blocked",
    "Conflict",
    "Invalid",
    "MemoryApiError",
    "MemoryDisabled",
    "NotFound",
    "Throttled",
    "Unavailable",
]
