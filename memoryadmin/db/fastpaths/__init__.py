"""Fenced speed tricks: every use of another library's private names lives in this package.

Each trick is one module named for the library it reaches into, with a boolean setting that
turns it off (settings.py, the block `# Fenced speed tricks`), read on every call so a test or
an operator can flip it; off, the caller takes the library's public API. Each module also checks,
once, that the private names it needs are still there (and that the library's major version is
the one it was written against); when they are not, it logs one warning and takes the public
path: an upgrade that breaks a trick costs speed, never correctness.

| setting                  | module              | library (written against)        |
|--------------------------|---------------------|----------------------------------|
| FASTPATH_DJANGO_CURSOR   | django_cursor.py    | Django 5.2, psycopg 3.3          |
| FASTPATH_API_LEAN_GET    | api/fastpath_drf.py | DRF 3.x (no private names: it    |
|                          |                     | re-implements DRF's dispatch;    |
|                          |                     | it lives in the API, whose token |
|                          |                     | check it uses)                   |
| FASTPATH_PYDANTIC_       | pydantic_models.py  | pydantic 2.x                     |
| CONSTRUCT                |                     |                                  |
| FASTPATH_STORE_RESIDENT_ | ../pool.py          | psycopg_pool 3.x (no private     |
| CONNECTION               |                     | names: a loop keeps its last     |
|                          |                     | connection and its cursor)       |

A third, FASTPATH_REDIS_CLIENT (redis-py's client behind Django's RedisCache, through its private
`_cache`, for the API throttle's script and `/healthz`'s PING), is gone: those now use the
redis-py client `memoryadmin.db.redis.client` builds from the cache's URL, no private name.

Two tricks were measured to buy less than the noise and removed (bench/RESULTS.md): pydantic
models built by setting their private slots (then `model_construct`; back as
FASTPATH_PYDANTIC_CONSTRUCT for issue 42, where ~17 µs a read is a sixth of the margin), and
django-csp's header built once per process by reading django-csp's private response attributes
(now django-csp's own middleware).

Imports nothing of ours: the facts and the API use it.
"""

from __future__ import annotations

import functools
import logging
import threading
from importlib.metadata import PackageNotFoundError, version

from django.conf import settings

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_broken: dict[str, str] = {}  # setting name -> why the trick is off for this process


def enabled(name: str) -> bool:
    """The trick's setting (default on), and it has not been found broken in this process."""
    return bool(getattr(settings, name)) and name not in _broken


def broken(name: str, why: str) -> None:
    """The trick no longer fits the library: off for the rest of this process, said once."""
    with _lock:
        if name in _broken:
            return
        _broken[name] = why
    logger.warning("fast path %s is off: %s; using the library's public API instead", name, why)


def broken_reset() -> None:
    """Forget what was found broken (tests)."""
    with _lock:
        _broken.clear()


@functools.cache
def major_version(distribution: str) -> int | None:
    """The installed major version of a distribution, None when it cannot be told (read once
    per process)."""
    try:
        return int(version(distribution).split(".")[0])
    except (PackageNotFoundError, ValueError):
        return None


def fits(name: str, distribution: str, major: int, *needed: tuple[object, str]) -> bool:
    """True when `distribution` is at major version `major` and each `(object, attribute)` in
    `needed` exists; otherwise the trick is marked broken (logged once) and False."""
    found = major_version(distribution)
    if found != major:
        broken(name, f"{distribution} {found} is installed, the trick was written for {major}.x")
        return False
    for owner, attribute in needed:
        if not hasattr(owner, attribute):
            owner_name = getattr(owner, "__name__", type(owner).__name__)
            broken(name, f"{distribution} no longer has {owner_name}.{attribute}")
            return False
    return True
