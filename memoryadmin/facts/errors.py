"""Domain errors raised by services; views map each to one HTTP status and error shape.

A refused fact (FactInvalid, FactBlocked) is also a ValueError, as upstream's are, so code
ported from commerce_common.memory that catches ValueError keeps working."""

from __future__ import annotations


class FactError(Exception):
    """Base: a code for machines, a message for people, per-field messages for forms."""

    code = "invalid"

    def __init__(self, message: str, *, fields: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields or {}


class FactInvalid(FactError, ValueError):
    code = "invalid"


class FactBlocked(FactError, ValueError):
    """The write filter refused the value. The message never repeats the value."""

    code = "blocked_by_filter"


class FactNotFound(FactError):
    code = "not_found"


class FactConflict(FactError):
    """The caller's expected version is stale: someone changed the fact since it was read."""

    code = "version_conflict"

    def __init__(self, message: str, *, current_version: int | None = None) -> None:
        super().__init__(message)
        self.current_version = current_version


class FactStateError(FactError):
    """The action does not apply to the fact as it is (e.g. approving an active fact)."""

    code = "invalid_state"


class FactLearningPaused(FactStateError):
    """The traveller turned learning off: the agent and extraction may not add or change facts."""

    code = "learning_paused"


class FactMemoryDisabled(FactStateError):
    """The airline switched memory off (MemorySettings.memory_enabled): the agent and extraction
    may not save anything, and the agent's reads come back empty."""

    code = "memory_disabled"


class WriteFilterMisconfigured(FactBlocked):
    """A stored blocked pattern is not a valid regular expression. The filter fails closed:
    nothing it would have checked is written until a privacy admin fixes the pattern. A kind of
    FactBlocked, so every form that handles a refused value refuses this too (never a 500);
    the API answers 503 with its own code. The message names neither the pattern nor the
    value."""

    code = "write_filter_misconfigured"
