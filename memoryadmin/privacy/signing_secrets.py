"""Webhook signing secrets: made in the library's format (`whsec_` + base64) and stored
encrypted, since signing needs the secret itself (a hash would not do). The encryption key is
derived from SECRET_KEY (and its fallbacks, so a rotation keeps old secrets readable)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets as _random

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

PREFIX = "whsec_"


def _fernet(secret_key: str) -> Fernet:
    digest = hmac.new(secret_key.encode(), b"memoryadmin.privacy.webhook-secret", hashlib.sha256)
    return Fernet(base64.urlsafe_b64encode(digest.digest()))


def _box() -> MultiFernet:
    keys = [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]
    return MultiFernet([_fernet(key) for key in keys])


def new_secret() -> str:
    return PREFIX + base64.b64encode(_random.token_bytes(32)).decode()


def seal(secret: str) -> str:
    return _box().encrypt(secret.encode()).decode()


def unseal(sealed: str) -> str:
    try:
        return _box().decrypt(sealed.encode()).decode()
    except InvalidToken as exc:  # SECRET_KEY rotated without keeping the old one as a fallback
        raise ValueError("This recipient's secret can no longer be read; rotate it.") from exc
