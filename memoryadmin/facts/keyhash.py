"""The keyed hash of a fact's key, stored with every event of the fact (`FactEvent.key_hash`).

It stands in for the key once the fact is erased (`#` + HMAC-SHA256 over subject and key, with a
key derived from SECRET_KEY): a fact's events still group, the topic is gone, and nobody without
the secret can test guesses against it. Written when each event is inserted, so erasing a fact
finds its events through (subject_id, key_hash) and never has to rewrite an indexed column.

No model imports here: `models` uses it to fill the column on every ORM write.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import re

from django.conf import settings

# A hashed key starts with "#", which normalize_key never leaves in a real key.
DIGEST_PREFIX = "#"
DIGEST_LENGTH = 41  # "#" and 40 hex digits
_DIGEST_SALT = "memoryadmin.facts.erasure.key-digest"
# Its own salt: a redacted value's hash never equals a key's, even for the same words.
_VALUE_DIGEST_SALT = "memoryadmin.facts.redaction.value-digest"
_DIGEST_HEX_LENGTH = DIGEST_LENGTH - 1
_DIGEST = re.compile(rf"^#[0-9a-f]{{{_DIGEST_HEX_LENGTH}}}$")


@functools.lru_cache(maxsize=8)
def _derived_key(secret: str, salt: str = _DIGEST_SALT) -> bytes:
    """Django's salted_hmac key derivation, done once per secret (a sweep chunk hashes 1,000
    keys): sha256(salt + secret)."""
    return hashlib.sha256((salt + secret).encode()).digest()


def key_digest(subject_id: str, key: str, *, secret: str | None = None) -> str:
    """HMAC-SHA256 with a key derived from SECRET_KEY (or `secret`), over subject and key, so the
    same topic of two travellers does not correlate. The same value as
    `salted_hmac(_DIGEST_SALT, subject + NUL + key, secret, algorithm="sha256")`."""
    derived = _derived_key(settings.SECRET_KEY if secret is None else secret)
    mac = hmac.new(derived, f"{subject_id}\x00{key}".encode(), hashlib.sha256)
    return DIGEST_PREFIX + mac.hexdigest()[:_DIGEST_HEX_LENGTH]


def value_digest(subject_id: str, key: str, value: str) -> str:
    """What a redacted version keeps of its value: HMAC-SHA256 over subject, key and value with
    its own salt, so the old words can be recognised when shown again, never read back, and
    guesses cannot be tested without the secret."""
    derived = _derived_key(settings.SECRET_KEY, _VALUE_DIGEST_SALT)
    mac = hmac.new(derived, f"{subject_id}\x00{key}\x00{value}".encode(), hashlib.sha256)
    return DIGEST_PREFIX + mac.hexdigest()[:_DIGEST_HEX_LENGTH]


def is_key_digest(key: str) -> bool:
    return bool(_DIGEST.match(key))


def event_key_hash(subject_id: str, key: str) -> str:
    """What an event stores in `key_hash`: "" for an event about no fact (a clear, a hold), the
    key itself when it already is a digest (an erasure event), else the digest of the key."""
    if not key:
        return ""
    if is_key_digest(key):
        return key
    return key_digest(subject_id, key)


def history_hashes(subject_id: str, key: str) -> list[str]:
    """The `key_hash` values under which a fact's events may be stored: the digest under today's
    SECRET_KEY and under each of SECRET_KEY_FALLBACKS (events written before a key rotation).
    A digest given as `key` is its own and only hash."""
    if not key:
        return []
    if is_key_digest(key):
        return [key]
    hashes = [key_digest(subject_id, key)]
    for secret in settings.SECRET_KEY_FALLBACKS:
        digest = key_digest(subject_id, key, secret=secret)
        if digest not in hashes:
            hashes.append(digest)
    return hashes
