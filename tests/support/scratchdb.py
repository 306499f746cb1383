"""A fresh, empty database on the test server for a child process that migrates and writes on
its own (a fresh checkout's first commands), dropped afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

import psycopg
from django.conf import settings
from psycopg import sql


@contextmanager
def scratch_database() -> Iterator[str]:
    """Create an empty database next to the test database; yields its DATABASE_URL."""
    params = settings.DATABASES["default"]
    server = {
        "host": params.get("HOST") or None,
        "port": params.get("PORT") or None,
        "user": params.get("USER") or None,
        "password": params.get("PASSWORD") or None,
    }
    name = f"scratch_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    user = quote(server["user"] or "", safe="")
    password = f":{quote(server['password'], safe='')}" if server["password"] else ""
    host = quote(server["host"] or "localhost", safe="")  # a socket folder, percent-encoded
    port = f":{server['port']}" if server["port"] else ""
    try:
        yield f"postgres://{user}{password}@{host}{port}/{name}"
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
