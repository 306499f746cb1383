"""Issuing, revoking and checking service tokens.

The secret is random, shown once, and stored only as its SHA-256: looking a token up by the hash
of what the caller sent takes the same time whatever the secret, so there is no per-character
comparison to time. `last_used_at` is refreshed at most once a minute so that a busy agent host
does not turn every read into a write.

An active token is remembered per process for `API_TOKEN_CACHE_SECONDS` (5 by default), so most
requests do not look it up in the database. Revoking drops it at once in the revoking process;
other processes stop accepting it within those seconds.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memoryadmin.conf.env import RATE_FORMS, parse_rate
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import PolicyAction
from memoryadmin.facts.services import policy_record
from memoryadmin.facts.validation import clean_reason, sanitize_text

from .models import TOKEN_NAME_MAX_LENGTH, Scope, ServiceToken

SECRET_PREFIX = "mat_"  # recognisable in logs and by secret scanners
SECRET_MAX_LENGTH = 256
LAST_USED_RESOLUTION = timedelta(minutes=1)
TOKEN_CACHE_MAX_ENTRIES = 1024

_token_cache: dict[str, tuple[float, ServiceToken]] = {}  # digest -> (monotonic expiry, token)
_token_cache_lock = threading.Lock()


def token_cache_clear() -> None:
    """Forget every remembered token in this process."""
    with _token_cache_lock:
        _token_cache.clear()


def _cached_token(digest: str) -> ServiceToken | None:
    entry = _token_cache.get(digest)
    if entry is None or entry[0] <= time.monotonic():
        return None
    return entry[1]


def _remember_token(digest: str, token: ServiceToken) -> None:
    ttl = settings.API_TOKEN_CACHE_SECONDS
    if ttl <= 0:
        return
    with _token_cache_lock:
        if len(_token_cache) >= TOKEN_CACHE_MAX_ENTRIES:
            _token_cache.clear()
        _token_cache[digest] = (time.monotonic() + ttl, token)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def clean_scopes(scopes: Iterable[str]) -> list[str]:
    """Known scopes only, each once, in a stable order."""
    wanted = list(scopes)
    unknown = sorted({scope for scope in wanted if scope not in Scope.values})
    if unknown:
        raise ValidationError(
            {
                "scopes": f"Unknown scope(s): {', '.join(unknown)}. "
                f"Choose from: {', '.join(Scope.values)}."
            }
        )
    if not wanted:
        raise ValidationError({"scopes": "Choose at least one scope."})
    return [scope for scope in Scope.values if scope in wanted]


def clean_throttle_rate(rate: str) -> str:
    """ "" (use the API_THROTTLE_RATE setting) or a rate in the one grammar the settings use
    (`parse_rate`), so a stored rate always parses when the throttle reads it."""
    rate = (rate or "").strip()
    if rate:
        try:
            parse_rate(rate)
        except ValueError:
            raise ValidationError(
                {"throttle_rate": f"Write it as requests per period: {RATE_FORMS}; e.g. 600/min."}
            ) from None
    return rate


@transaction.atomic
def token_issue(
    *,
    name: str,
    scopes: Iterable[str],
    created_by: Any = None,
    throttle_rate: str = "",
    actor: Actor | None = None,
    reason: str = "",
) -> tuple[ServiceToken, str]:
    """Create a token and return it with its secret, which is not stored and cannot be shown
    again. Recorded in the policy history (name, prefix and scopes; never the secret)."""
    clean_name = sanitize_text(name) if isinstance(name, str) else ""
    if not clean_name:
        raise ValidationError({"name": "Give the token a name, e.g. the agent host it is for."})
    if len(clean_name) > TOKEN_NAME_MAX_LENGTH:
        raise ValidationError({"name": f"At most {TOKEN_NAME_MAX_LENGTH} characters."})
    clean = clean_scopes(scopes)
    rate = clean_throttle_rate(throttle_rate)
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    token = ServiceToken.objects.create(
        name=clean_name,
        token_hash=hash_secret(secret),
        prefix=secret[:8],
        scopes=clean,
        throttle_rate=rate,
        created_by=created_by,
    )
    policy_record(
        action=PolicyAction.TOKEN_ISSUED,
        actor=actor or _default_actor(created_by),
        reason=clean_reason(reason),
        target=f"token {token.pk}: {token.name}",
        after=_snapshot(token),
    )
    return token, secret


def _default_actor(user: Any) -> Actor:
    return Actor.staff(user) if user is not None else Actor.system("shell")


def _snapshot(token: ServiceToken) -> dict[str, Any]:
    return {
        "name": token.name,
        "prefix": token.prefix,
        "scopes": token.scopes,
        "revoked": token.revoked_at is not None,
    }


def tokens_list() -> list[ServiceToken]:
    """Every token, newest first, with who created it (one query)."""
    return list(ServiceToken.objects.select_related("created_by"))


@transaction.atomic
def token_revoke(
    *, token: ServiceToken, actor: Actor | None = None, reason: str = ""
) -> ServiceToken:
    """Stop a token working at once. Revoking twice keeps the first revocation time (and
    records one event)."""
    with _token_cache_lock:
        _token_cache.pop(token.token_hash, None)
    if token.revoked_at is None:
        now = timezone.now()
        changed = ServiceToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
            revoked_at=now
        )
        token.refresh_from_db(fields=["revoked_at"])
        if changed:
            policy_record(
                action=PolicyAction.TOKEN_REVOKED,
                actor=actor or Actor.system("shell"),
                reason=clean_reason(reason),
                target=f"token {token.pk}: {token.name}",
                before={**_snapshot(token), "revoked": False},
                after=_snapshot(token),
            )
    return token


def token_authenticate(secret: str) -> ServiceToken | None:
    """The active token whose secret this is, or None."""
    if not isinstance(secret, str) or not secret or len(secret) > SECRET_MAX_LENGTH:
        return None
    digest = hash_secret(secret)
    token = _cached_token(digest)
    if token is None:
        token = ServiceToken.objects.filter(token_hash=digest).first()
        if token is None or not hmac.compare_digest(token.token_hash, digest):
            return None
        if token.revoked_at is not None:
            return None
        _remember_token(digest, token)
    now = timezone.now()
    if token.last_used_at is None or token.last_used_at <= now - LAST_USED_RESOLUTION:
        stale = Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - LAST_USED_RESOLUTION)
        ServiceToken.objects.filter(stale, pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
