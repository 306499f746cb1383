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


class MemoryRemains(RequestStateError):
    """An erasure request cannot close while the traveller still has facts."""

    def __init__(self, subject_id: str, facts: int) -> None:
        noun = "fact" if facts == 1 else "facts"
        super().__init__(
            f"{subject_id} still has {facts} {noun} in memory. Erase them first; the request "
            "closes with the evidence once nothing is left."
        )
        self.subject_id = subject_id
        self.facts = facts
