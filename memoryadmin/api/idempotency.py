"""Idempotency-Key for writes: an agent host that retries a write after a timeout gets the first
response back instead of writing twice.

A record is keyed by (token, key). A replay within the TTL with the same request returns the
stored status, body and headers plus `Idempotent-Replayed: true` and writes nothing; the same key
with a different request is refused (422 `idempotency_key_reused`). The write and its record
commit in one transaction, so two concurrent requests with one key cannot both write: the loser
rolls back and replays the winner's response.

Stored bodies can contain fact values. Deleting is erasing, so `IDEMPOTENCY_ERASE_SQL` is
registered with the one erasure path (`facts.erasure`) and runs whenever a subject's facts are
deleted, cleared or swept (and `IDEMPOTENCY_REDACT_SQL` with `facts.redaction`, for the replies
that quote a redacted version): it erases the stored replies but keeps each key with its keyed
request fingerprint and status, so a retry after the erasure is answered 409
`already_processed` and never runs twice. `idempotency_purge_expired` drops old records.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.crypto import salted_hmac
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from .errors import ApiError, IdempotencyKeyReused
from .models import IDEMPOTENCY_KEY_MAX_LENGTH, IdempotencyRecord

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
STORED_HEADERS = ("ETag", "Location")
PURGE_BATCH_SIZE = 1000
_FINGERPRINT_SALT = "memoryadmin.api.idempotency.request-fingerprint"


class _LostRace(Exception):
    """Another request stored a record under the same key first."""


def idempotency_ttl() -> timedelta:
    return timedelta(hours=settings.API_IDEMPOTENCY_TTL_HOURS)


# Stored replies (and paths, which name fact keys) may quote erased facts: they go, as a part of
# the erasing statement (no statement of its own; costs an index probe when the travellers have
# no stored reply). What stays is that each key was used, for which request (a keyed
# fingerprint) and with what status, so a retry of that request is still recognised and never
# runs again.
IDEMPOTENCY_ERASE_SQL = (
    f'UPDATE "{IdempotencyRecord._meta.db_table}" SET response_body = NULL,'  # noqa: S608
    " response_headers = '{}'::jsonb, path = '', reply_erased_at = %(now)s"
    " WHERE subject_id IN (SELECT subject_id FROM erased_subjects)"
    " AND reply_erased_at IS NULL"
)


# A redacted version's words go from the stored replies that quote them (a PUT's or a batch's
# reply holds the value and quote of the version it wrote): found among the traveller's records
# by the words themselves, anywhere in the reply, and blanked as an erasure blanks them.
# Registered with `facts.redaction`; run in the redaction's transaction.
IDEMPOTENCY_REDACT_SQL = f"""
UPDATE "{IdempotencyRecord._meta.db_table}" AS r
SET response_body = NULL, response_headers = '{{}}'::jsonb, path = '',
    reply_erased_at = %(now)s
WHERE r.subject_id = %(subject)s AND r.reply_erased_at IS NULL
  AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(%(words)s::jsonb) AS w(word)
              WHERE jsonb_path_exists(r.response_body, '$.** ? (@ == $word)',
                                      jsonb_build_object('word', w.word)))
"""  # noqa: S608 - the table name is ours


def idempotency_purge_expired() -> int:
    """Delete records past the TTL in batches; returns how many went. Safe to re-run."""
    cutoff = timezone.now() - idempotency_ttl()
    total = 0
    while True:
        ids = list(
            IdempotencyRecord.objects.filter(created_at__lte=cutoff).values_list("pk", flat=True)[
                :PURGE_BATCH_SIZE
            ]
        )
        if not ids:
            return total
        deleted, _ = IdempotencyRecord.objects.filter(pk__in=ids).delete()
        total += deleted


def idempotency_key(request: Request) -> str | None:
    """The request's key, if any; printable ASCII, 1 to 255 characters."""
    raw = request.headers.get(HEADER)
    if raw is None:
        return None
    key = raw.strip()
    problem = ""
    if not key:
        problem = "Must not be empty."
    elif len(key) > IDEMPOTENCY_KEY_MAX_LENGTH:
        problem = f"At most {IDEMPOTENCY_KEY_MAX_LENGTH} characters."
    elif any(not (" " <= ch <= "~") for ch in key):
        problem = "Use printable ASCII characters only (a UUID is a good key)."
    if problem:
        raise ApiError(
            status_code=status.HTTP_400_BAD_REQUEST,
            code="invalid",
            message="The Idempotency-Key header is not valid.",
            fields={HEADER: problem},
        )
    return key


def request_fingerprint(request: Request) -> str:
    """What makes two requests "the same": method, path and query, parsed body, If-Match.

    Keyed (HMAC with a key derived from SECRET_KEY), because it outlives the erasure of the
    values in the body: a plain hash of a short value could be matched against guesses."""
    material = {
        "method": request.method,
        "path": request.get_full_path(),
        "body": request.data,
        "if_match": request.headers.get("If-Match", ""),
    }
    encoded = json.dumps(material, sort_keys=True, ensure_ascii=True, default=str)
    return salted_hmac(_FINGERPRINT_SALT, encoded, algorithm="sha256").hexdigest()


def _replay(record: IdempotencyRecord, fingerprint: str) -> Response:
    if record.request_hash != fingerprint:
        raise IdempotencyKeyReused()
    if record.reply_erased_at is not None:
        raise ApiError(
            status_code=status.HTTP_409_CONFLICT,
            code="already_processed",
            message="This request was carried out before. Its stored reply was erased with "
            "the values it held, so it is not run again.",
            headers={REPLAYED_HEADER: "true"},
        )
    headers = {**record.response_headers, REPLAYED_HEADER: "true"}
    return Response(record.response_body, status=record.status_code, headers=headers)


def run_idempotent(
    request: Request, *, subject_id: str, perform: Callable[[], Response]
) -> Response:
    """Run `perform` (the write) at most once per (token, Idempotency-Key).

    Only successful responses are stored; a failed write raises, rolls back, and may be retried
    with the same key."""
    key = idempotency_key(request)
    if key is None:
        return perform()
    token = request.auth
    fingerprint = request_fingerprint(request)
    for attempt in range(2):
        try:
            with transaction.atomic():
                record = (
                    IdempotencyRecord.objects.select_for_update()
                    .filter(token=token, key=key)
                    .first()
                )
                if record is not None and record.created_at <= timezone.now() - idempotency_ttl():
                    record.delete()
                    record = None
                if record is not None:
                    return _replay(record, fingerprint)
                response = perform()
                if status.is_success(response.status_code):
                    try:
                        # No savepoint: a lost race rolls the whole request back anyway.
                        with transaction.atomic(savepoint=False):
                            IdempotencyRecord.objects.create(
                                token=token,
                                key=key,
                                subject_id=subject_id,
                                method=request.method,
                                # An erasing DELETE names the key it erased: written after the
                                # erasers ran, so it is kept blank from the start.
                                path="" if request.method == "DELETE" else request.path,
                                request_hash=fingerprint,
                                status_code=response.status_code,
                                response_body=response.data,
                                response_headers={
                                    name: response[name]
                                    for name in STORED_HEADERS
                                    if response.has_header(name)
                                },
                            )
                    except IntegrityError as exc:
                        raise _LostRace from exc  # roll back our write too
                return response
        except _LostRace:
            if attempt:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
