"""HttpMemoryStore: the async MemoryStore protocol over the memoryadmin agent API.

An agent host that does not run inside the Django project uses this: one pooled httpx client,
a bearer token, typed errors, and safe retries. Only calls that can be repeated without a
second effect are retried (reads, PUT/DELETE, and writes carrying an Idempotency-Key, which
every write sent by this class does), and only on connection failures and timeouts: a clear
answer from the server (4xx/5xx) is never retried behind the caller's back.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import quote

import anyio
import httpx
from pydantic import ValidationError

from .errors import (
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
from .text import clamp_query, clean_text, clean_value, normalize_key
from .types import (
    EVIDENCE_MAX_LENGTH,
    KEY_MAX_LENGTH,
    SUBJECT_ID_MAX_LENGTH,
    VALUE_MAX_LENGTH,
    MemoryFact,
)

logger = logging.getLogger(__name__)

API_PREFIX: Final = "/api/v1"
USER_AGENT: Final = "memoryadmin-client/0.1"
# Failures where the request may not have reached the server, or its answer was lost.
RETRYABLE_ERRORS: Final = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
_REPEATABLE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
_WRITE_METHODS: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class _Auto:
    """Sentinel: 'generate an Idempotency-Key for this write'."""

    def __repr__(self) -> str:
        return "AUTO"


AUTO: Final = _Auto()


@dataclass(frozen=True)
class VersionedFact:
    """A fact with the version from its ETag, for a conditional write (If-Match) later.

    `held` is set when a write was stored but the agent cannot see it yet: "pending_review"
    (possibly sensitive, waiting for a person) or "not_visible" (the traveller paused the
    agent's use of memory). `fact` is then what was sent, under the key as stored."""

    fact: MemoryFact
    version: int | None
    held: str | None = None


@dataclass(frozen=True)
class PortalLink:
    """A single-use link into the traveller's privacy portal: send their browser to `url`."""

    url: str
    expires_at: datetime


def _as_sent(fact: MemoryFact, evidence: str | None = None) -> dict[str, str]:
    """A fact for a store write, under the store's rules (as DjangoMemoryStore applies them):
    a value over 200 characters is clamped with the "...[truncated]" marker and a key over 64
    normalized and clamped, where the API would refuse them (it refuses direct writes). A
    quote longer than the server keeps is not sent (it would be dropped there)."""
    key = fact.key if len(fact.key) <= KEY_MAX_LENGTH else normalize_key(fact.key)
    value = fact.value if len(fact.value) <= VALUE_MAX_LENGTH else clean_value(fact.value)
    sent = {"key": key, "value": value, "category": str(fact.category)}
    if isinstance(evidence, str) and evidence and len(evidence) <= EVIDENCE_MAX_LENGTH:
        sent["evidence"] = evidence
    return sent


def _segment(value: str) -> str:
    """Quote one path segment completely: a key or subject id may contain '/', '?' or '%'."""
    return quote(value, safe="")


def check_subject_id(subject_id: object) -> str:
    """The server's rule for subject ids, checked before anything is sent: an id that cannot be
    one URL path segment ("", ".", "..", "a/b") would otherwise reach another address and come
    back as NotFound, where the protocol promises a ValueError."""
    if (
        not isinstance(subject_id, str)
        or not subject_id
        or subject_id in {".", ".."}
        or len(subject_id) > SUBJECT_ID_MAX_LENGTH
        or "/" in subject_id
        or clean_text(subject_id) != subject_id
        or " " in subject_id
    ):
        raise ValueError(
            "Subject ids are 1-128 characters, not . or .., without spaces, slashes or "
            "control characters."
        )
    return subject_id


def _subject_path(subject_id: str, *rest: str) -> str:
    return "/".join([f"{API_PREFIX}/subjects", _segment(check_subject_id(subject_id)), *rest])


def parse_etag_version(etag: str | None) -> int | None:
    """'"3"' or 'W/"3"' -> 3; anything else -> None."""
    if not etag:
        return None
    tag = etag.strip()
    if tag.startswith("W/"):
        tag = tag[2:]
    tag = tag.strip('"')
    return int(tag) if tag.isdigit() else None


def parse_retry_after(header: str | None) -> float | None:
    """Retry-After is either seconds or an HTTP date."""
    if not header:
        return None
    header = header.strip()
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _field_messages(raw: object) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        return {}
    fields: dict[str, str] = {}
    for name, message in raw.items():
        if isinstance(message, list | tuple):
            message = " ".join(str(part) for part in message)
        fields[str(name)] = str(message)
    return fields


def error_from_response(response: httpx.Response) -> MemoryApiError:
    """Map an error answer to its typed exception, reading the API's error body if it has one."""
    status = response.status_code
    code, message, fields = "", "", {}
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping):
            code = str(error.get("code") or "")
            message = str(error.get("message") or "")
            fields = _field_messages(error.get("fields"))
        elif isinstance(body.get("detail"), str):  # a framework default body
            message = body["detail"]
    message = message or f"The memory service answered HTTP {status}."
    common: dict[str, Any] = {"status": status, "fields": fields}
    if status in (401, 403):
        return AuthError(message, code=code or "unauthorized", **common)
    if status == 404:
        return NotFound(message, code=code or "not_found", **common)
    if status == 409 and code == "memory_disabled":
        return MemoryDisabled(message, code=code, **common)
    if status in (409, 412):
        return Conflict(message, code=code or "conflict", **common)
    if status == 422 and code == "blocked_by_filter":
        return Blocked(message, code=code, **common)
    if status in (400, 422):
        return Invalid(message, code=code or "invalid", **common)
    if status == 429:
        return Throttled(
            message,
            retry_after=parse_retry_after(response.headers.get("Retry-After")),
            code=code or "throttled",
            **common,
        )
    if status >= 500:
        return Unavailable(message, code=code or "unavailable", **common)
    return MemoryApiError(message, code=code or "error", **common)


async def _closed_with_loop(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    """Closes `client` when finalized. The event loop finalizes the async generators it saw
    when it shuts down (asyncio.run does, so does trio), and does so while it still runs, so
    the pool is closed properly even if nobody called aclose()."""
    try:
        yield
    finally:
        await client.aclose()


def _current_loop() -> object:
    """The running event loop; pooled connections belong to it and cannot move to another."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # another async library (trio): one loop per process in practice
        return None


class HttpMemoryStore:
    """The MemoryStore protocol over HTTP, plus tier_one, single-fact reads and writes, turns.

    `session_id` tags the writes of one conversation (the server stores only its hash); a host
    that shares one store across conversations passes `session_id=` per write instead.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 5.0,
        session_id: str | None = None,
        retries: int = 2,
        backoff: float = 0.1,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not token:
            raise ValueError("A service token is required.")
        if retries < 0:
            raise ValueError("retries must be >= 0")
        self.base_url = base_url.rstrip("/")
        self.session_id = session_id
        self.retries = retries
        self.backoff = backoff
        self._timeout = httpx.Timeout(timeout)
        self._headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._client_loop: object = None
        self._closer: AsyncGenerator[None, None] | None = None

    # --- plumbing ---------------------------------------------------------------------------

    async def _http(self) -> httpx.AsyncClient:
        """The pooled client of the running event loop.

        A host normally has one loop and so one pool for its whole life. Code that runs each
        call in a loop of its own (asyncio.run, asgiref's async_to_sync) cannot reuse a
        connection across calls: it belongs to a loop that has gone. So each loop gets its own
        client, and the loop itself closes it when it shuts down (see `_closed_with_loop`),
        leaving no socket open behind a closed loop."""
        loop = _current_loop()
        if self._client is not None and self._client_loop is loop and not self._client.is_closed:
            return self._client
        client = httpx.AsyncClient(
            base_url=self.base_url,
            headers=self._headers,
            timeout=self._timeout,
            transport=self._transport,
        )
        closer = _closed_with_loop(client)
        await closer.__anext__()  # registers it with the loop's async-generator hooks
        self._client, self._client_loop, self._closer = client, loop, closer
        return client

    async def aclose(self) -> None:
        """Close the pool. Call it from the loop that used the store (or use `async with`)."""
        client, closer = self._client, self._closer
        self._client = self._closer = None
        if client is None or self._client_loop is not _current_loop():
            return  # another loop's client: that loop closes it when it ends
        await client.aclose()
        if closer is not None:
            await closer.aclose()

    async def __aenter__(self) -> HttpMemoryStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        idempotency_key: str | _Auto | None = AUTO,
    ) -> httpx.Response:
        """Send one API call and return the successful response, or raise a typed error.

        Writes get a fresh Idempotency-Key unless `idempotency_key=None`; the same key is reused
        on every retry so the server applies the write once. A POST without a key is sent once.
        """
        method = method.upper()
        send_headers = dict(headers or {})
        if isinstance(idempotency_key, _Auto):
            idempotency_key = str(uuid.uuid4()) if method in _WRITE_METHODS else None
        if idempotency_key is not None:
            send_headers["Idempotency-Key"] = idempotency_key
        repeatable = method in _REPEATABLE_METHODS or idempotency_key is not None
        attempts = 1 + (self.retries if repeatable else 0)
        client = await self._http()
        for attempt in range(1, attempts + 1):
            try:
                response = await client.request(
                    method, path, params=params, json=json, headers=send_headers
                )
            except RETRYABLE_ERRORS as exc:
                if attempt < attempts:
                    delay = self.backoff * (2 ** (attempt - 1))
                    logger.info(
                        "memory api %s %s: %s, retry %d in %.2fs",
                        method,
                        path,
                        type(exc).__name__,
                        attempt,
                        delay,
                    )
                    await anyio.sleep(delay)
                    continue
                raise Unavailable(
                    f"The memory service could not be reached ({type(exc).__name__}) "
                    f"after {attempt} attempt{'s' if attempt > 1 else ''}.",
                    attempts=attempt,
                    code="unavailable",
                ) from exc
            except httpx.HTTPError as exc:  # e.g. a malformed base URL: retrying cannot help
                raise Unavailable(
                    f"The memory service could not be called ({type(exc).__name__}).",
                    attempts=attempt,
                    code="unavailable",
                ) from exc
            if response.is_error:
                raise error_from_response(response)
            return response
        raise AssertionError("unreachable")  # pragma: no cover

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._decode(await self.request(method, path, **kwargs))

    @staticmethod
    def _decode(response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            raise MemoryApiError(
                "The memory service sent a response that is not JSON.",
                status=response.status_code,
                code="bad_response",
            ) from exc

    @staticmethod
    def _fact(data: Any) -> MemoryFact:
        try:
            return MemoryFact.model_validate(data)
        except ValidationError as exc:
            raise MemoryApiError(
                "The memory service sent a fact in an unexpected shape.", code="bad_response"
            ) from exc

    def _facts(self, body: Any) -> list[MemoryFact]:
        if not isinstance(body, Mapping) or not isinstance(body.get("facts"), list):
            raise MemoryApiError(
                "The memory service sent an unexpected response.", code="bad_response"
            )
        return [self._fact(item) for item in body["facts"]]

    def _session_field(self, session_id: str | None) -> dict[str, str]:
        session = session_id or self.session_id
        return {"session_id": session} if session else {}

    # --- the MemoryStore protocol -----------------------------------------------------------

    async def get_facts(self, subject_id: str) -> list[MemoryFact]:
        return self._facts(await self._json("GET", _subject_path(subject_id, "facts")))

    async def upsert_facts(
        self,
        subject_id: str,
        facts: Sequence[MemoryFact],
        *,
        session_id: str | None = None,
        evidence: Mapping[str, str] | None = None,
    ) -> None:
        """Replace by key. An empty list is a no-op and sends nothing. `evidence` maps a fact's
        key to the quote it was saved from (save_memory's): kept by the server as the
        assistant's until a posted turn shows the traveller said it."""
        if not facts:
            return
        quotes = evidence or {}
        body = {
            "facts": [_as_sent(fact, quotes.get(fact.key)) for fact in facts],
            **self._session_field(session_id),
        }
        await self.request("PUT", _subject_path(subject_id, "facts"), json=body)

    async def search_facts(self, subject_id: str, query: str) -> list[MemoryFact]:
        """The query is cut to 100 characters, as DjangoMemoryStore cuts it."""
        body = await self._json(
            "GET", _subject_path(subject_id, "facts", "search"), params={"q": clamp_query(query)}
        )
        return self._facts(body)

    async def delete_fact(self, subject_id: str, key: str) -> bool:
        """True when a fact was deleted, False when there was none (the protocol's contract).
        The key is normalized here as the server would ("a/b" is a_b), so that it travels as
        one path segment; one that is empty once normalized names no fact."""
        path = _subject_path(subject_id, "facts")
        key = normalize_key(key) if isinstance(key, str) else ""
        if not key:
            return False
        try:
            await self.request("DELETE", f"{path}/{_segment(key)}")
        except NotFound:
            return False
        return True

    async def clear(self, subject_id: str) -> None:
        await self.request("POST", _subject_path(subject_id, "clear"))

    async def purge_generation(self, subject_id: str) -> int:
        body = await self._json("GET", _subject_path(subject_id, "purge-generation"))
        value = body.get("purge_generation") if isinstance(body, Mapping) else None
        if not isinstance(value, int):
            raise MemoryApiError(
                "The memory service sent an unexpected response.", code="bad_response"
            )
        return value

    # --- beyond the protocol ----------------------------------------------------------------

    async def memory_enabled(self) -> bool:
        """The airline's switch (reads are empty and saves refused while it is off)."""
        body = await self._json("GET", f"{API_PREFIX}/memory")
        value = body.get("memory_enabled") if isinstance(body, Mapping) else None
        if not isinstance(value, bool):
            raise MemoryApiError(
                "The memory service sent an unexpected response.", code="bad_response"
            )
        return value

    async def tier_one(self, subject_id: str) -> list[MemoryFact]:
        """The short profile a host injects into every turn."""
        return self._facts(await self._json("GET", _subject_path(subject_id, "tier-one")))

    async def read_fact(self, subject_id: str, key: str) -> VersionedFact | None:
        try:
            response = await self.request("GET", _subject_path(subject_id, "facts", _segment(key)))
        except NotFound:
            return None
        return VersionedFact(
            fact=self._fact(self._decode(response)),
            version=parse_etag_version(response.headers.get("ETag")),
        )

    async def get_fact(self, subject_id: str, key: str) -> MemoryFact | None:
        found = await self.read_fact(subject_id, key)
        return found.fact if found else None

    async def put_fact(
        self,
        subject_id: str,
        key: str,
        value: str,
        category: str | None = None,
        *,
        expected_version: int | None = None,
        session_id: str | None = None,
    ) -> VersionedFact:
        """Create or replace one fact. With `expected_version` (from read_fact) the write only
        happens if nobody changed the fact since; otherwise Conflict is raised."""
        body: dict[str, Any] = {"value": value, **self._session_field(session_id)}
        if category is not None:
            body["category"] = str(category)
        headers = {"If-Match": f'"{expected_version}"'} if expected_version is not None else None
        response = await self.request(
            "PUT", _subject_path(subject_id, "facts", _segment(key)), json=body, headers=headers
        )
        data = self._decode(response)
        version = parse_etag_version(response.headers.get("ETag"))
        if response.status_code == 202 and isinstance(data, Mapping):
            sent = {"key": data.get("key") or key, "value": value}
            if category is not None:
                sent["category"] = str(category)
            return VersionedFact(self._fact(sent), version, held=str(data.get("status") or "held"))
        return VersionedFact(self._fact(data), version)

    async def post_turn(
        self,
        subject_id: str,
        *,
        session_id: str,
        turn_id: str,
        messages: Sequence[Mapping[str, str]],
    ) -> dict[str, Any]:
        """Hand a finished turn over for extraction; returns {"job_id", "status"}. Posting the
        same turn_id again is answered with the same job, so a retry is harmless."""
        body = {
            "session_id": session_id,
            "turn_id": turn_id,
            "messages": [dict(message) for message in messages],
        }
        result = await self._json("POST", _subject_path(subject_id, "turns"), json=body)
        return dict(result) if isinstance(result, Mapping) else {"result": result}

    async def record_uses(self, subject_id: str, turns: Sequence[Mapping[str, Any]]) -> None:
        """Use receipts of one or many turns (see usage.py): one POST .../usage, sent once
        (an append-only receipt is not worth a retry on the agent's time)."""
        if turns:
            await self.request(
                "POST",
                _subject_path(subject_id, "usage"),
                json={"turns": list(turns)},
                idempotency_key=None,
            )

    async def job(self, job_id: int | str) -> dict[str, Any]:
        """The state of an extraction job posted with post_turn."""
        result = await self._json("GET", f"{API_PREFIX}/jobs/{_segment(str(job_id))}")
        return dict(result) if isinstance(result, Mapping) else {"result": result}

    async def portal_link(self, subject_id: str) -> PortalLink:
        """A link into the privacy portal for a traveller the caller has signed in (scope
        `portal:issue`). Sent once, never retried: every call issues a new link, and a retry
        after a lost answer would leave a second working link behind."""
        body = await self._json(
            "POST", _subject_path(subject_id, "portal-links"), idempotency_key=None
        )
        try:
            url = body["url"]
            expires_at = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
        except (TypeError, KeyError, AttributeError, ValueError) as exc:
            raise MemoryApiError(
                "The memory service sent an unexpected response.", code="bad_response"
            ) from exc
        if not isinstance(url, str):
            raise MemoryApiError(
                "The memory service sent an unexpected response.", code="bad_response"
            )
        return PortalLink(url=url, expires_at=expires_at)
