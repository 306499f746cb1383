"""Monthly range partitions of the append-only tables: the history, the use
receipts, the staff access record and the webhook delivery log.

Each table is partitioned by range on its row's time (`created_at`, `used_at`, `at`,
`attempted_at`), one partition per calendar month in UTC, named `<table>_yYYYYmMM`, plus a
default partition `<table>_default` that catches a row no month partition takes, so an insert
never fails for want of a partition. Indexes and constraints are declared on the parent, so
every partition has the same ones (PostgreSQL creates them on each partition, now and later).

The primary key of a partitioned table must hold the partition key: the database's key is
`(id, <time>)`. Django still sees `id` as the primary key: ids come from one identity sequence
on the parent, so no two rows share one, but the database no longer refuses a duplicate `id`
written by hand in another month. Nothing refers to these rows by foreign key.

The upkeep (`partitions_upkeep`, a beat task) creates each month one month ahead and moves
rows that landed in the default partition into their month's partition. Retention by month
(`month_drop`) replaces a month past every retention of its rows by a partition holding only
the rows that must outlive it (copied in the same transaction, found through indexes, not by
reading the month), and drops the old one.

The apps that own the tables register them (`register`) from their `AppConfig.ready()`, with
what keeps a row past its month's drop and when a month may go; the migrations that convert
the tables call `convert_to_partitioned` / `convert_to_plain` with the same names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db import connection, transaction
from django.utils import timezone
from psycopg import sql

logger = logging.getLogger("memoryadmin.partitions")

# This month and the next exist (the hourly upkeep makes the next a month before it is needed;
# a row of a month with none lands in the default partition and is moved later). No more: an
# erasure finds a fact's history and receipts in every month, so each empty month ahead is one
# more partition (and its indexes) opened by every delete (bench/RESULTS.md, issue 42).
MONTHS_AHEAD = 1

# --- The statements (identifiers filled in by psycopg.sql, values as parameters).

# A month's partition is made detached, filled with the default partition's rows of its month
# (strays), then attached: so a month that already has rows in the default partition can
# still be made (a plain `PARTITION OF` would be refused), and no row is lost or seen twice.
SQL_NEW_PART = """
CREATE TABLE {part} (LIKE {table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS) {storage}
"""

SQL_MOVE_STRAYS = """
WITH moved AS (
    DELETE FROM {default} WHERE {column} >= %(lo)s AND {column} < %(hi)s RETURNING *
)
INSERT INTO {part} SELECT * FROM moved
"""

SQL_ATTACH = """
ALTER TABLE {table} ATTACH PARTITION {part} FOR VALUES FROM (%(lo)s) TO (%(hi)s)
"""

SQL_STRAY_MONTHS = """
SELECT DISTINCT date_trunc('month', {column} AT TIME ZONE 'UTC') FROM {default}
"""

SQL_PARTITIONS = """
SELECT c.relname, pg_get_expr(c.relpartbound, c.oid)
FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
WHERE i.inhparent = to_regclass(%(table)s)
ORDER BY c.relname
"""

SQL_IS_PARTITIONED = """
SELECT EXISTS (SELECT 1 FROM pg_partitioned_table WHERE partrelid = to_regclass(%(table)s))
"""

# A partition with deferred foreign-key checks still pending in the transaction cannot be
# detached or dropped: they are run first.
SQL_CHECKS_NOW = """
SET CONSTRAINTS ALL IMMEDIATE
"""

SQL_ESTIMATE = """
SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)
"""

SQL_DETACH = """
ALTER TABLE {table} DETACH PARTITION {part}
"""

# One part of the keep rule at a time, each through its own index (the planner still reads the
# month if the part's rows are most of it); a row an earlier part took is not taken twice.
SQL_KEEP_ROWS = """
INSERT INTO {kept} SELECT * FROM {part} AS t WHERE ({keep}) AND NOT ({taken})
"""

# The kept rows are found through indexes, never by reading the month: the planner cannot
# estimate a condition between two columns (the history's `key <> key_hash`: it guesses half the
# month, where a month two years old has a few live facts' events), so it would read the month
# and hash the whole fact table. For the drop's transaction only: no sequential scans where an
# index serves, nested loops of index probes, no workers, no JIT (compiling a plan costed for a
# whole month takes longer than running it). When most of a month is kept, the partial index
# still reads it in time order, as the copy must anyway.
SQL_INDEX_PLANS = """
SELECT set_config('jit', 'off', true), set_config('enable_seqscan', 'off', true),
       set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true),
       set_config('max_parallel_workers_per_gather', '0', true)
"""

# The kept table proves it holds only the month's rows (checked as each row goes in), so
# ATTACH skips its validation scan; the check is dropped after, the partition bound says it.
SQL_BOUND_CHECK = """
ALTER TABLE {kept} ADD CONSTRAINT {check}
CHECK ({column} IS NOT NULL AND {column} >= %(lo)s AND {column} < %(hi)s)
"""

SQL_DROP_CHECK = """
ALTER TABLE {part} DROP CONSTRAINT {check}
"""

SQL_DROP = """
DROP TABLE {part}
"""

# A closed month's own index for its keep rule (`Partitioned.closed_index`): made on the month
# partition only, never on the parent, so this month's rows are not in it (see below).
SQL_CLOSED_INDEX = """
CREATE INDEX {concurrently} IF NOT EXISTS {index} ON {part} {definition}
"""

# NULL when there is no such index, false when a concurrent build failed and left it invalid.
SQL_INDEX_VALID = """
SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s))
"""

SQL_DROP_INDEX = """
DROP INDEX {concurrently} {index}
"""

SQL_RENAME = """
ALTER TABLE {old} RENAME TO {new}
"""


@dataclass(frozen=True)
class Partitioned:
    """One partitioned table: its name, its time column, the storage options of each
    partition, and (for retention by month) the oldest time a month may hold to be dropped
    (`cutoff()`, None: never by month) and the SQL conditions on `t` of rows kept past it
    (a row any of them names is kept; none: the month goes whole). For the history and the
    receipts the same conditions, joined by OR, are what the row sweep keeps, so the two
    agree."""

    table: str
    column: str
    storage: str = ""
    cutoff: Callable[[datetime], datetime | None] = field(default=lambda now: None, compare=False)
    keep: tuple[str, ...] = ()
    # An index (columns and predicate) each closed month gets for itself, so that its drop
    # finds a keep rule's rows without reading the month, where the parent cannot carry it:
    # the history's live facts' events are `key <> key_hash`, which redaction changes; on
    # the parent it would make every redaction write every index (no more HOT update). On a
    # closed month only that month's rare redactions pay for it.
    closed_index: str = ""
    # Run in the upkeep's transaction before a stray row is moved (the access record's
    # append-only trigger lets its rows leave only when told).
    before_move: str = ""


_REGISTRY: dict[str, Partitioned] = {}


def register(spec: Partitioned) -> None:
    _REGISTRY[spec.table] = spec


def registered() -> list[Partitioned]:
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


# --- Months


def month_of(moment: datetime) -> datetime:
    moment = moment.astimezone(UTC)
    return datetime(moment.year, moment.month, 1, tzinfo=UTC)


def add_months(month: datetime, n: int) -> datetime:
    index = month.year * 12 + month.month - 1 + n
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


def part_name(table: str, month: datetime) -> str:
    return f"{table}_y{month.year:04d}m{month.month:02d}"


def default_name(table: str) -> str:
    return f"{table}_default"


def _sql(template: str, **names: str) -> str:
    """The statement with its names quoted as identifiers (`storage`, `keep`, `taken`,
    `definition` and `concurrently` are SQL)."""
    return (
        sql.SQL(template)
        .format(
            **{
                k: (
                    sql.SQL(v)
                    if k in ("storage", "keep", "taken", "definition", "concurrently")
                    else sql.Identifier(v)
                )
                for k, v in names.items()
            }
        )
        .as_string(None)
    )


def _storage(options: str) -> str:
    return f"WITH ({options})" if options else ""


# --- Reads


def is_partitioned(table: str, cursor=None) -> bool:
    def run(cur) -> bool:
        cur.execute(SQL_IS_PARTITIONED, {"table": table})
        return bool(cur.fetchone()[0])

    if cursor is not None:
        return run(cursor)
    with connection.cursor() as cur:
        return run(cur)


def partitions(table: str) -> dict[str, str]:
    """The table's partitions: name -> bound as PostgreSQL writes it."""
    with connection.cursor() as cursor:
        cursor.execute(SQL_PARTITIONS, {"table": table})
        return dict(cursor.fetchall())


# --- Making months


def _month_create(cursor, spec_table: str, column: str, storage: str, month: datetime) -> bool:
    name = part_name(spec_table, month)
    cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
    if cursor.fetchone()[0]:
        return False
    bounds = {"lo": month, "hi": add_months(month, 1)}
    cursor.execute(_sql(SQL_NEW_PART, part=name, table=spec_table, storage=_storage(storage)))
    cursor.execute(
        _sql(SQL_MOVE_STRAYS, default=default_name(spec_table), part=name, column=column), bounds
    )
    cursor.execute(_sql(SQL_ATTACH, table=spec_table, part=name), bounds)
    return True


def month_create(spec: Partitioned, month: datetime) -> bool:
    """Make the month's partition if it is missing, taking its rows out of the default
    partition; one transaction. True when it was made."""
    with transaction.atomic(), connection.cursor() as cursor:
        if spec.before_move:
            cursor.execute(spec.before_move)
        return _month_create(cursor, spec.table, spec.column, spec.storage, month_of(month))


def partitions_upkeep(*, now: datetime | None = None, ahead: int = MONTHS_AHEAD) -> list[str]:
    """Every registered table: this month and the next `ahead` exist, and every row in the
    default partition is moved into its month's (made for it). Returns the partitions made."""
    now = now or timezone.now()
    made: list[str] = []
    for spec in registered():
        if not is_partitioned(spec.table):
            continue
        with connection.cursor() as cursor:
            cursor.execute(
                _sql(SQL_STRAY_MONTHS, column=spec.column, default=default_name(spec.table))
            )
            strays = {month_of(row[0].replace(tzinfo=UTC)) for row in cursor.fetchall()}
        wanted = {add_months(month_of(now), n) for n in range(ahead + 1)} | strays
        for month in sorted(wanted):
            if month_create(spec, month):
                made.append(part_name(spec.table, month))
    if made:
        logger.info("partitions made: %s", ", ".join(made))
    return made


def closed_index_name(part: str) -> str:
    return f"{part}_keep"


def _months(spec: Partitioned) -> list[datetime]:
    names = [n for n in partitions(spec.table) if n != default_name(spec.table)]
    return sorted(datetime(int(n[-7:-3]), int(n[-2:]), 1, tzinfo=UTC) for n in names)


def closed_months_index(*, now: datetime | None = None) -> list[str]:
    """Every closed month (ended before last month began: no row is written to it any more)
    of a table with a `closed_index` gets that index, once. Built CONCURRENTLY outside a
    transaction, so an erasure redacting the month's rows meanwhile does not wait. The one read
    of the month the drop needs, done ahead of it, off the drop's lock on the parent. Returns
    the indexes made."""
    last_open = add_months(month_of(now or timezone.now()), -1)
    made: list[str] = []
    for spec in registered():
        if not spec.closed_index or not is_partitioned(spec.table):
            continue
        for month in _months(spec):
            part = part_name(spec.table, month)
            index = closed_index_name(part)
            if month >= last_open:
                continue
            concurrently = "" if connection.in_atomic_block else "CONCURRENTLY"
            with connection.cursor() as cursor:
                cursor.execute(SQL_INDEX_VALID, [index])
                valid = cursor.fetchone()[0]
                if valid:
                    continue
                if valid is False:  # a concurrent build that failed half-way: again
                    cursor.execute(_sql(SQL_DROP_INDEX, concurrently=concurrently, index=index))
                cursor.execute(
                    _sql(
                        SQL_CLOSED_INDEX,
                        concurrently=concurrently,
                        index=index,
                        part=part,
                        definition=spec.closed_index,
                    )
                )
            made.append(index)
    if made:
        logger.info("closed months indexed: %s", ", ".join(made))
    return made


# --- Retention by month


def droppable_months(spec: Partitioned, *, now: datetime | None = None) -> list[datetime]:
    """Months whose every row is older than the table's retention (the month's end is at or
    before the cutoff), oldest first."""
    cutoff = spec.cutoff(now or timezone.now())
    if cutoff is None:
        return []
    return [month for month in _months(spec) if add_months(month, 1) <= cutoff]


@dataclass(frozen=True)
class DropStep:
    """One statement of a month's drop, in order; `keeps` marks the copies of kept rows (their
    row counts are the rows kept). `bench/drop_profile.py` runs the same list under EXPLAIN."""

    label: str
    statement: str
    params: dict[str, datetime] | None = None
    keeps: bool = False


def drop_steps(spec: Partitioned, month: datetime) -> list[DropStep]:
    """The statements of `month_drop` after its plan settings, for one month of `spec`."""
    month = month_of(month)
    name = part_name(spec.table, month)
    kept = f"{name}_kept"
    check = f"{kept}_bound"
    bounds = {"lo": month, "hi": add_months(month, 1)}
    storage = _storage(spec.storage)
    steps = [
        DropStep("new table", _sql(SQL_NEW_PART, part=kept, table=spec.table, storage=storage)),
        DropStep(
            "bound check",
            _sql(SQL_BOUND_CHECK, kept=kept, check=check, column=spec.column),
            bounds,
        ),
        DropStep("detach", _sql(SQL_DETACH, table=spec.table, part=name)),
    ]
    for n, keep in enumerate(spec.keep):
        taken = " OR ".join(f"({earlier})" for earlier in spec.keep[:n]) or "false"
        steps.append(
            DropStep(
                f"keep rule {n + 1}",
                _sql(SQL_KEEP_ROWS, kept=kept, part=name, keep=keep, taken=taken),
                keeps=True,
            )
        )
    steps += [
        DropStep("attach", _sql(SQL_ATTACH, table=spec.table, part=kept), bounds),
        DropStep("drop bound check", _sql(SQL_DROP_CHECK, part=kept, check=check)),
        DropStep("drop month", _sql(SQL_DROP, part=name)),
        DropStep("rename", _sql(SQL_RENAME, old=kept, new=name)),
    ]
    return steps


def month_drop(spec: Partitioned, month: datetime) -> tuple[int, int]:
    """Drop one month of the table, keeping the rows `spec.keep` names: in one transaction
    the month is detached, its kept rows copied into a new partition of the same range, which
    is attached in its place, and the old one dropped. Returns (rows kept, rows dropped as the
    statistics estimate them, -1 when the month was never analyzed): counting them exactly
    would read the month, which the drop otherwise never does."""
    name = part_name(spec.table, month_of(month))
    kept_rows = 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(SQL_CHECKS_NOW)
        cursor.execute(SQL_INDEX_PLANS)
        cursor.execute(SQL_ESTIMATE, [name])
        estimate = int(cursor.fetchone()[0])
        for step in drop_steps(spec, month):
            cursor.execute(step.statement, step.params)
            if step.keeps:
                kept_rows += cursor.rowcount
    dropped = max(estimate - kept_rows, 0) if estimate >= 0 else -1
    logger.info("%s: dropped (estimated) %d rows, kept %d", name, dropped, kept_rows)
    return kept_rows, dropped


def retention_by_month(*, now: datetime | None = None) -> dict[str, tuple[int, int]]:
    """Every month of every registered table that its retention allows to go: dropped, its
    kept rows kept. Returns partition -> (kept, dropped)."""
    done = {}
    for spec in registered():
        if not is_partitioned(spec.table):
            continue
        for month in droppable_months(spec, now=now):
            done[part_name(spec.table, month)] = month_drop(spec, month)
    return done


# --- Converting a table (the migrations)

SQL_INDEXES = """
SELECT i.relname, pg_get_indexdef(i.oid), x.indisprimary
FROM pg_index AS x JOIN pg_class AS i ON i.oid = x.indexrelid
WHERE x.indrelid = to_regclass(%(table)s)
ORDER BY i.relname
"""

SQL_CONSTRAINTS = """
SELECT conname, pg_get_constraintdef(oid)
FROM pg_constraint
WHERE conrelid = to_regclass(%(table)s) AND contype IN ('c', 'f')
ORDER BY conname
"""

SQL_TRIGGERS = """
SELECT tgname, pg_get_triggerdef(oid)
FROM pg_trigger
WHERE tgrelid = to_regclass(%(table)s) AND NOT tgisinternal
ORDER BY tgname
"""


def _definitions(cursor, table: str):
    cursor.execute(SQL_INDEXES, {"table": table})
    indexes = cursor.fetchall()
    cursor.execute(SQL_CONSTRAINTS, {"table": table})
    constraints = cursor.fetchall()
    cursor.execute(SQL_TRIGGERS, {"table": table})
    triggers = cursor.fetchall()
    return indexes, constraints, triggers


def _moved_definitions(
    cursor, old: str, new: str, indexes, constraints, triggers, *, pkey: tuple[str, ...]
):
    """Re-make on `new` the indexes, check and foreign-key constraints and triggers read from
    `old` (under the same names, the old ones dropped first so the names are free)."""
    for name, _definition in constraints:
        cursor.execute(_sql("ALTER TABLE {t} DROP CONSTRAINT {c}", t=old, c=name))
    for name, _definition, primary in indexes:
        if primary:
            cursor.execute(_sql("ALTER TABLE {t} DROP CONSTRAINT {c}", t=old, c=name))
        else:
            cursor.execute(_sql("DROP INDEX {i}", i=name))
    cursor.execute(
        sql.SQL("ALTER TABLE {t} ADD CONSTRAINT {c} PRIMARY KEY ({k})")
        .format(
            t=sql.Identifier(new),
            c=sql.Identifier(f"{new}_pkey"),
            k=sql.SQL(", ").join(map(sql.Identifier, pkey)),
        )
        .as_string(None)
    )
    quoted_old = sql.Identifier(old).as_string(None)
    for _name, definition, primary in indexes:
        if primary:
            continue
        head, _, tail = definition.partition(" ON ")
        # "CREATE INDEX name ON public.old USING ..." -> "... ON new USING ..."
        _, _, rest = tail.partition(" USING ")
        assert quoted_old.strip('"') in tail.split(" USING ")[0]
        cursor.execute(f"{head} ON {sql.Identifier(new).as_string(None)} USING {rest}")
    for name, definition in constraints:
        cursor.execute(_sql("ALTER TABLE {t} ADD CONSTRAINT {c} ", t=new, c=name) + definition)
    for name, definition in triggers:
        cursor.execute(_sql("DROP TRIGGER {g} ON {t}", g=name, t=old))
        head, _, tail = definition.partition(" ON ")
        _, _, rest = tail.partition(" FOR EACH ")
        cursor.execute(f"{head} ON {sql.Identifier(new).as_string(None)} FOR EACH {rest}")


def _restart_identity(cursor, table: str) -> None:
    cursor.execute(
        _sql(
            "SELECT setval(pg_get_serial_sequence(%(t)s, 'id'),"
            " coalesce((SELECT max(id) FROM {table}), 0) + 1, false)",
            table=table,
        ),
        {"t": table},
    )


def convert_to_partitioned(
    cursor, *, table: str, column: str, storage: str = "", now: datetime | None = None
) -> None:
    """Make `table` partitioned by month on `column`, keeping every row, index, check and
    foreign-key constraint and trigger: a month partition for each month its rows fall in
    and this month and the next three, and the default partition."""
    if is_partitioned(table, cursor):
        return
    old = f"{table}__plain"
    cursor.execute(_sql(SQL_RENAME, old=table, new=old))
    indexes, constraints, triggers = _definitions(cursor, old)
    cursor.execute(
        _sql(
            "CREATE TABLE {table} (LIKE {old} INCLUDING DEFAULTS INCLUDING IDENTITY)"
            " PARTITION BY RANGE ({column})",
            table=table,
            old=old,
            column=column,
        )
    )
    cursor.execute(
        _sql(
            "CREATE TABLE {d} PARTITION OF {t} DEFAULT {storage}",
            d=default_name(table),
            t=table,
            storage=_storage(storage),
        )
    )
    cursor.execute(
        _sql(
            "SELECT DISTINCT date_trunc('month', {c} AT TIME ZONE 'UTC') FROM {o}", c=column, o=old
        )
    )
    months = {month_of(row[0].replace(tzinfo=UTC)) for row in cursor.fetchall()}
    this = month_of(now or timezone.now())
    months |= {add_months(this, n) for n in range(MONTHS_AHEAD + 1)}
    for month in sorted(months):
        _month_create(cursor, table, column, storage, month)
    cursor.execute(_sql("INSERT INTO {t} SELECT * FROM {o}", t=table, o=old))
    _moved_definitions(cursor, old, table, indexes, constraints, triggers, pkey=("id", column))
    _restart_identity(cursor, table)
    cursor.execute(_sql(SQL_DROP, part=old))


def convert_to_plain(cursor, *, table: str, storage: str = "") -> None:
    """The way back: one plain table with every row, primary key `id` again."""
    if not is_partitioned(table, cursor):
        return
    old = f"{table}__partitioned"
    cursor.execute(_sql(SQL_RENAME, old=table, new=old))
    indexes, constraints, triggers = _definitions(cursor, old)
    cursor.execute(
        _sql(
            "CREATE TABLE {table} (LIKE {old} INCLUDING DEFAULTS INCLUDING IDENTITY) {storage}",
            table=table,
            old=old,
            storage=_storage(storage),
        )
    )
    cursor.execute(_sql("INSERT INTO {t} SELECT * FROM {o}", t=table, o=old))
    _moved_definitions(cursor, old, table, indexes, constraints, triggers, pkey=("id",))
    _restart_identity(cursor, table)
    cursor.execute(_sql(SQL_DROP, part=old))
