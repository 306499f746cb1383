"""Fenced speed tricks (memoryadmin/db/fastpaths/, api/fastpath_drf.py): each shortcut through
another library's private names can be turned off on its own (FASTPATH_...=false), leaving the
public, slower path; each also turns itself off when the library is not the version it was
written against (docs/ARCHITECTURE.md, "Fenced speed tricks")."""

from memoryadmin.conf.env import env

FASTPATH_DJANGO_CURSOR = env.bool("FASTPATH_DJANGO_CURSOR", default=True)
FASTPATH_API_LEAN_GET = env.bool("FASTPATH_API_LEAN_GET", default=True)
FASTPATH_STORE_RESIDENT_CONNECTION = env.bool("FASTPATH_STORE_RESIDENT_CONNECTION", default=True)
FASTPATH_PYDANTIC_CONSTRUCT = env.bool("FASTPATH_PYDANTIC_CONSTRUCT", default=True)
