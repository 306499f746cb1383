"""The unit tier (`make unit`, `pytest -m unit`): pure code, no database, no Redis, no server.

Every module here sets `pytestmark = pytest.mark.unit` (tests/conftest.py refuses a test here
without it, one marked `unit` elsewhere, and one here that asks for the database). `make unit`
points DATABASE_URL and the Redis URLs at closed ports, so a test that reaches for either fails
at once; pytest-django also refuses the database to any test without the `django_db` mark."""

from __future__ import annotations

import pytest
from django.db import connections


@pytest.fixture(autouse=True)
def no_connection_opened():
    """A test opens no database connection: a module that opened one behind pytest-django's
    back (a raw psycopg connect is not blocked) belongs in the database tier. Compared with the
    connections before the test, since `make test` runs this tier in the same processes as the
    database tests, whose connections stay open between tests."""
    before = {alias: connections[alias].connection for alias in connections}
    yield
    opened = [
        alias
        for alias in connections
        if connections[alias].connection is not None
        and connections[alias].connection is not before.get(alias)
    ]
    assert not opened, f"a unit test opened a database connection: {opened}"
