"""The registry of the copies a redacted version must leave, beside the history's own.

Redacting one past version of a fact (`services.fact_version_redact`) blanks its value and
quote in the history snapshots that hold it. Apps above `facts` that keep a copy of a value
outside the history (stored API replies) register one SQL statement here from their
`AppConfig.ready()`, as they register an eraser with `erasure.register_eraser`; the service runs
each in its transaction. `facts` never imports them.
"""

from __future__ import annotations

__all__ = ["register_version_redactor", "version_redactors"]

_REDACTORS: dict[str, str] = {}


def register_version_redactor(name: str, *, sql: str) -> None:
    """`sql` is one UPDATE or DELETE (no RETURNING) that blanks the copies of one traveller's
    words. Its parameters: `%(subject)s` (the traveller), `%(key)s` (the fact's key),
    `%(words)s` (a JSON array of the version's value and quote) and `%(now)s`. Registering the
    same name again replaces it."""
    _REDACTORS[name] = sql


def version_redactors() -> dict[str, str]:
    """The statements registered, by name."""
    return dict(_REDACTORS)
