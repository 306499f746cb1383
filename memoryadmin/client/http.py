"""Old path of `memoryadmin_client.http` (HttpMemoryStore):
the same objects, re-exported."""

from memoryadmin_client.http import (
    API_PREFIX,
    AUTO,
    RETRYABLE_ERRORS,
    USER_AGENT,
    HttpMemoryStore,
    PortalLink,
    VersionedFact,
    error_from_response,
    parse_etag_version,
    parse_retry_after,
)

__all__ = [
    "API_PREFIX",
    "AUTO",
    "RETRYABLE_ERRORS",
    "USER_AGENT",
    "HttpMemoryStore",
    "PortalLink",
    "VersionedFact",
    "error_from_response",
    "parse_etag_version",
    "parse_retry_after",
]
