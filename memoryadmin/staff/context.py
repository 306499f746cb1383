"""What every staff page needs in its frame: the signed-in role and the navigation."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse

from .roles import EDITOR, PRIVACY_ADMIN, VIEWER, has_role, role_of

# (label, url name, role needed). An entry whose URL is not installed yet is left out, so the
# privacy admins' settings pages (namespace "settings", mounted at /staff/settings/ from
# memoryadmin/urls.py) appear in the menu as soon as their URLs are included.
NAV = (
    ("Overview", "staff:overview", VIEWER),
    ("Travellers", "staff:travellers", VIEWER),
    ("Review queue", "staff:review", VIEWER),
    ("Memory quality", "staff:quality", EDITOR),
    ("Privacy requests", "privacy:list", VIEWER),
    ("Access record", "staff:access_record", PRIVACY_ADMIN),
    ("Settings", "settings:memory", PRIVACY_ADMIN),
)


ROLE_WORDS = {VIEWER: "viewer", EDITOR: "editor", PRIVACY_ADMIN: "privacy admin"}


def staff_nav(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    role = role_of(user) if user is not None else None
    if role is None:
        return {"staff_role": None, "staff_nav": [], "can_edit": False}
    items = []
    for label, name, needed in NAV:
        if not has_role(user, needed):
            continue
        try:
            url = reverse(name)
        except NoReverseMatch:
            continue
        current = request.path == url or (
            url != reverse("staff:overview") and request.path.startswith(url)
        )
        items.append({"label": label, "url": url, "current": current})
    return {
        "staff_role": role,
        "staff_role_words": ROLE_WORDS.get(role, str(role).replace("_", " ")),
        "staff_nav": items,
        "can_edit": has_role(user, EDITOR),
    }
