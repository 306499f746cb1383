"""Which fenced speed tricks a test turns off (memoryadmin/fastpaths/): every one at once, and
each on its own. Tests parametrize over `OFF_SETS` and turn the named settings off with
pytest-django's `settings` fixture (read on every call, so no reload is needed)."""

from __future__ import annotations

import pytest

from memoryadmin.db import fastpaths

TRICKS = (
    "FASTPATH_DJANGO_CURSOR",
    "FASTPATH_API_LEAN_GET",
    "FASTPATH_STORE_RESIDENT_CONNECTION",
    "FASTPATH_PYDANTIC_CONSTRUCT",
)
# The tricks on the store's native async path (memoryadmin/db/pool.py, the wire models).
NATIVE_TRICKS = ("FASTPATH_STORE_RESIDENT_CONNECTION", "FASTPATH_PYDANTIC_CONSTRUCT")
ALL_OFF = pytest.param(TRICKS, id="all-off")
OFF_SETS = [ALL_OFF, *(pytest.param((name,), id=f"{name}-off") for name in TRICKS)]


def turn_off(settings, names) -> None:
    fastpaths.broken_reset()
    for name in names:
        setattr(settings, name, False)
