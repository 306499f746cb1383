"""The statements of the database layer itself: where the primary's WAL stands, and what a
replica has replayed. Plain SQL constants, as in `facts/sql.py`; `tests/facts/test_sql.py` runs
EXPLAIN on them too.
"""

from __future__ import annotations

# --- read replicas (replicas.py) -----------------------------------------------------------------

# On the primary, just after a write committed: a WAL position at or past its commit record,
# as a number of bytes (comparable with the replicas' below). The insert position, not the write
# position: with `synchronous_commit = off` a commit returns before its record is written out,
# and `pg_current_wal_lsn()` could then still be short of it.
SQL_CURRENT_LSN = """
SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn
"""

# On a replica: is it a standby, how far has it replayed (bytes, as above), and how many seconds
# behind is its replay (0 when it has replayed all it received).
SQL_REPLICA_STATE = """
SELECT pg_is_in_recovery(),
       pg_last_wal_replay_lsn() - '0/0'::pg_lsn,
       CASE WHEN pg_last_wal_receive_lsn() IS NULL
              OR pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN 0
            ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0)
       END
"""

# --- a lock, then a write, in one round trip (cursors.py `locked_write`) ---------------------

# The lock statement (`{lock}`, a SELECT ... FOR UPDATE) inside one that also asks for generic
# plans for the rest of its transaction: `set_config(..., true)` is undone when the transaction
# ends (at the pipeline's Sync, committed or rolled back), so the write queued behind it runs
# its cached generic plan without a SET and a RESET of its own (two statements fewer a call) and
# nothing outlives the transaction. Its one row comes whether or not the lock found a row.
SQL_LOCK_THEN_GENERIC_PLANS = """
SELECT set_config('plan_cache_mode', 'force_generic_plan', true),
       (SELECT count(*) FROM ({lock}) AS locked)
"""

# --- a write's generic plan on Django's connection (cursors.py `prepared_write`) -------------

# Sent in one round trip (pipeline mode) around a prepared write inside Django's transaction:
# the first keeps the current `plan_cache_mode` in a variable of our own and asks for generic
# plans, the write then runs its cached generic plan, and the second puts the mode back as it
# was. Both `set_config(..., true)`: for the transaction only (undone by a rollback, or by a
# savepoint's), so even a caller's enclosing transaction goes on with its own mode.
SQL_GENERIC_PLANS_ON = """
SELECT set_config('memoryadmin.plan_cache_mode_was', current_setting('plan_cache_mode'), true),
       set_config('plan_cache_mode', 'force_generic_plan', true)
"""
SQL_GENERIC_PLANS_BACK = """
SELECT set_config('plan_cache_mode', current_setting('memoryadmin.plan_cache_mode_was'), true)
"""

# --- a lock and a write as one server-side function (functions.py) ---------------------------

# Whether a function of that name exists (its name is its definition's hash).
SQL_FUNCTION_PRESENT = """
SELECT to_regproc(%s) IS NOT NULL
"""

# The functions of one prefix in the current schema (`install` drops those it did not make).
SQL_FUNCTIONS_OF_PREFIX = """
SELECT p.oid::regprocedure::text FROM pg_proc AS p
WHERE p.pronamespace = current_schema()::regnamespace AND p.proname LIKE %s
"""
