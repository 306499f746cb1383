"""Domain errors raised by services; views map each to one HTTP status and error shape."""

from __future__ import annotations


class FactError(Exception):
    """Base: a code for machines, a message for people, per-field messages for forms."""

    code = "invalid"

    def __init__(self, message: str, *, fields: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields or {}


class FactInvalid(FactError):
    code = "invalid"


class FactBlocked(FactError):
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
