"""Staff roles are Django groups, so privacy admins can manage them in one familiar place."""

from __future__ import annotations

from typing import Any

VIEWER = "viewer"
EDITOR = "editor"
PRIVACY_ADMIN = "privacy_admin"
ROLES = (VIEWER, EDITOR, PRIVACY_ADMIN)
# Each role includes the ones before it.
_RANK = {role: rank for rank, role in enumerate(ROLES)}
_UNSET = object()


def role_of(user: Any) -> str | None:
    """The strongest role a user holds, or None for someone who is not support staff."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return None
    if user.is_superuser:
        return PRIVACY_ADMIN
    cached = getattr(user, "_staff_role", _UNSET)
    if cached is not _UNSET:
        return cached  # one query per request, however many checks a page makes
    held = [name for name in user.groups.values_list("name", flat=True) if name in _RANK]
    role = max(held, key=_RANK.__getitem__, default=None)
    user._staff_role = role
    return role


def has_role(user: Any, role: str) -> bool:
    current = role_of(user)
    return current is not None and _RANK[current] >= _RANK[role]
