"""Errors the privacy services raise: each names the field to fix, in words for the form."""

from __future__ import annotations


class PrivacyError(Exception):
    def __init__(self, message: str, *, fields: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields or {}


class RequestInvalid(PrivacyError):
    pass


class RequestStateError(PrivacyError):
    pass
