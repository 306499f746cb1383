"""PostgreSQL, and how the agent's store uses it.

DATABASE_URL is required: `make run` and `make test` start an embedded PostgreSQL and set it;
production points it at its own server (production.env.example).
"""

from urllib.parse import unquote

from memoryadmin.conf.env import env

# libpq multi-host URLs work too: `postgresql://h1:5432,h2:5432/db?target_session_attrs=...`
# (the hosts and ports go to HOST and PORT, the query to OPTIONS).
_DATABASE = env.db_url("DATABASE_URL")
# A Unix socket folder is written percent-encoded in the host, as libpq reads it
# (`postgres://user@%2Fpath%2Fto%2Fsocket:5432/db`: the embedded server's URL).
_DATABASE["HOST"] = unquote(_DATABASE.get("HOST") or "")
# Seconds a connection is kept for the next request (0: one per request); a URL's own
# `?conn_max_age=` wins.
_DATABASE.setdefault("CONN_MAX_AGE", env.int("DB_CONN_MAX_AGE", default=60))
DATABASES = {"default": _DATABASE}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# DjangoMemoryStore serves the agent's reads on a native async psycopg pool (no thread hop); the
# tests turn it off where they need to see their own transaction (tests/conftest.py).
MEMORY_STORE_NATIVE_ASYNC = env.bool("MEMORY_STORE_NATIVE_ASYNC", default=True)
MEMORY_STORE_POOL_SIZE = env.int("MEMORY_STORE_POOL_SIZE", default=4)
# The agent's fixed statements run as prepared statements (planned once per connection). Turn
# off behind a transaction-mode pooler (pgbouncer) that cannot keep them.
MEMORY_PREPARED_STATEMENTS = env.bool("MEMORY_PREPARED_STATEMENTS", default=True)
