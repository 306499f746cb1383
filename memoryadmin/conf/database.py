"""PostgreSQL, and how the agent's store uses it.

DATABASE_URL is required: `make run` and `make test` start an embedded PostgreSQL and set it;
production points it at its own server (production.env.example).
"""

from urllib.parse import unquote

from django.core.exceptions import ImproperlyConfigured

from memoryadmin.conf.env import env

# libpq multi-host URLs work too: `postgresql://h1:5432,h2:5432/db?target_session_attrs=...`
# (the hosts and ports go to HOST and PORT, the query to OPTIONS).
_DATABASE = env.db_url("DATABASE_URL")
# A Unix socket folder is written percent-encoded in the host, as libpq reads it
# (`postgres://user@%2Fpath%2Fto%2Fsocket:5432/db`: the embedded server's URL).
_DATABASE["HOST"] = unquote(_DATABASE.get("HOST") or "")
# "transaction": the database URLs point at a transaction-mode pooler (pgbouncer,
# deploy/pgbouncer/): no server-side prepared statements, no server-side cursors, no session
# state across transactions (docs/ARCHITECTURE.md, "Behind pgbouncer"). Empty: a direct server.
DATABASE_POOLER = env.choice("DATABASE_POOLER", default="", choices=("", "transaction"))
if DATABASE_POOLER:
    # QuerySet.iterator() without DECLARE ... CURSOR (a cursor lives in its server session).
    _DATABASE["DISABLE_SERVER_SIDE_CURSORS"] = True
# Seconds a connection is kept for the next request (0: one per request); a URL's own
# `?conn_max_age=` wins.
_DATABASE.setdefault("CONN_MAX_AGE", env.int("DB_CONN_MAX_AGE", default=60))
# A kept connection is checked before a request reuses it: after a failover (libpq multi-host
# URL, `target_session_attrs=read-write`) each process finds the new primary by itself.
_DATABASE["CONN_HEALTH_CHECKS"] = True
DATABASES = {"default": _DATABASE}

# Read replicas (streaming standbys): their URLs separated by spaces; empty, none. Each becomes
# the alias `replica1`, `replica2`... (memoryadmin/db/replicas.py routes the reads that may
# go there; tests mirror them onto the test database).
DATABASE_REPLICAS: tuple[str, ...] = ()
for _number, _url in enumerate(env.str("DATABASE_REPLICA_URLS", default="").split(), start=1):
    try:
        _replica = env.db_url_config(_url)
    except (ValueError, TypeError):
        _replica = {}
    if not _replica:
        raise ImproperlyConfigured(f"DATABASE_REPLICA_URLS: item {_number} is not a database URL.")
    _replica["HOST"] = unquote(_replica.get("HOST") or "")
    _replica.setdefault("CONN_MAX_AGE", _DATABASE["CONN_MAX_AGE"])
    _replica["CONN_HEALTH_CHECKS"] = True
    _replica["TEST"] = {"MIRROR": "default"}
    _replica["DISABLE_SERVER_SIDE_CURSORS"] = bool(DATABASE_POOLER)
    DATABASES[f"replica{_number}"] = _replica
    DATABASE_REPLICAS += (f"replica{_number}",)
# A replica further behind than this (seconds of replay) is skipped until it catches up.
DATABASE_REPLICA_MAX_LAG_SECONDS = env.float("DATABASE_REPLICA_MAX_LAG_SECONDS", default=5.0)
# How long one process trusts its last look at a replica (its replay position, lag, up/down).
DATABASE_REPLICA_CHECK_SECONDS = env.float("DATABASE_REPLICA_CHECK_SECONDS", default=1.0)
# How long a traveller's last write position is kept in the shared cache: longer than any lag a
# replica may have and still be used.
DATABASE_READ_YOUR_WRITES_SECONDS = env.int("DATABASE_READ_YOUR_WRITES_SECONDS", default=60)
# How long this process uses its copy of the positions it has read (db/redis_watch.py:
# kept true by Redis's invalidation messages) without hearing from Redis (a PING every half of
# it); 0: no copy, every read of a position asks Redis.
DATABASE_REPLICA_POSITION_WATCH_SECONDS = env.float(
    "DATABASE_REPLICA_POSITION_WATCH_SECONDS", default=1.0
)
DATABASE_ROUTERS = ["memoryadmin.db.ReplicaRouter"] if DATABASE_REPLICAS else []
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# DjangoMemoryStore serves the agent's reads on a native async psycopg pool (no thread hop); the
# tests turn it off where they need to see their own transaction (tests/conftest.py).
MEMORY_STORE_NATIVE_ASYNC = env.bool("MEMORY_STORE_NATIVE_ASYNC", default=True)
MEMORY_STORE_POOL_SIZE = env.int("MEMORY_STORE_POOL_SIZE", default=4)
# The agent's fixed statements run as prepared statements (planned once per connection); off
# behind a transaction-mode pooler (DATABASE_POOLER=transaction; pgbouncer 1.18 cannot keep
# them), where the store's connections prepare nothing either.
MEMORY_PREPARED_STATEMENTS = env.bool("MEMORY_PREPARED_STATEMENTS", default=not DATABASE_POOLER)
# The store's delete (`db.locked_write`) asks for its erasing statement's generic plan inside
# the traveller's lock statement (for that transaction only) instead of a SET and a RESET around
# it: two statements fewer a delete. false: the SET and RESET (issue 42, bench/RESULTS.md).
DATABASE_PLAN_IN_LOCK = env.bool("DATABASE_PLAN_IN_LOCK", default=True)
# The store's delete (`db.locked_write`) as one statement: the call of a server-side function
# that `migrate` makes (the traveller's lock, then the erasing statement), when it exists.
# false: the two statements pipelined, as DATABASE_PLAN_IN_LOCK says (issue 42).
DATABASE_LOCKED_FUNCTIONS = env.bool("DATABASE_LOCKED_FUNCTIONS", default=True)
# Django's connection runs the fixed writes that go through `db.prepared_write` (the erasing
# statement of the portal's and staff's delete, `services.fact_delete`) as prepared statements
# on their cached generic plan instead of planning them every call; not behind a pooler or with
# MEMORY_PREPARED_STATEMENTS off. false: Django's cursor, planned each call (issue 42).
DATABASE_PREPARED_WRITES = env.bool("DATABASE_PREPARED_WRITES", default=True)
