"""The database layer: everything about *where* and *how* a statement runs, none of *what* it
means. It imports no app of ours; the domain (`facts` and the apps above it) sits on it and
uses only the names below (an import-linter contract forbids them the modules inside).

- Read replicas and read-your-writes (`replicas`, `routing`, `positions`, `redis_watch`): where
  a traveller's read goes (`subject_read`, `page_read`, `subject_fetch` for the async store)
  and a write's position (`written`, `written_async`, `written_keys`).
- The hot path's cursor and pipelines (`cursors`; `locked_write`: a lock and a write as one
  call of their server-side function, `LockedWrite`, made by `migrate` with
  `locked_functions_install` (`functions`), or in one round trip on the store's connections;
  `prepared_write`: a fixed write prepared, on its generic plan, on Django's connection), the
  store's per-loop connections (`pool`).
- Monthly partitions of the append-only tables (`partitions`).
- The one Redis client (`redis`) and the fenced speed tricks (`fastpaths`).

See docs/ARCHITECTURE.md, "Layers".
"""

from __future__ import annotations

from .async_reads import subject_fetch
from .cursors import (
    hot_cursor,
    in_own_pipelined_transaction,
    locked_write,
    pipelined,
    prepared_write,
)
from .fastpaths import enabled as fastpath_enabled
from .fastpaths import fits as fastpath_fits
from .fastpaths.pydantic_models import builder as model_builder
from .functions import LockedWrite
from .functions import install as locked_functions_install
from .partitions import (
    Partitioned,
    closed_months_index,
    convert_to_partitioned,
    convert_to_plain,
    month_drop,
    partitions_upkeep,
    retention_by_month,
)
from .partitions import register as partitioned_register
from .pool import close_pools as store_connections_close
from .pool import connection as store_connection
from .redis import (
    CACHE_ERRORS,
    cache_url,
    local_cache,
    shared_cache_failed,
    shared_cache_up,
    with_fallback,
)
from .redis import client as redis_client
from .replicas import (
    PRIMARY,
    ReplicaRouter,
    page_read,
    replica_states,
    staff_key,
    subject_key,
    subject_read,
    written,
    written_async,
    written_keys,
)

__all__ = [
    "CACHE_ERRORS",
    "LockedWrite",
    "PRIMARY",
    "Partitioned",
    "ReplicaRouter",
    "cache_url",
    "closed_months_index",
    "convert_to_partitioned",
    "convert_to_plain",
    "fastpath_enabled",
    "fastpath_fits",
    "hot_cursor",
    "in_own_pipelined_transaction",
    "local_cache",
    "locked_functions_install",
    "locked_write",
    "model_builder",
    "month_drop",
    "page_read",
    "partitioned_register",
    "partitions_upkeep",
    "pipelined",
    "prepared_write",
    "redis_client",
    "replica_states",
    "retention_by_month",
    "shared_cache_failed",
    "shared_cache_up",
    "staff_key",
    "store_connection",
    "store_connections_close",
    "subject_fetch",
    "subject_key",
    "subject_read",
    "with_fallback",
    "written",
    "written_async",
    "written_keys",
]
