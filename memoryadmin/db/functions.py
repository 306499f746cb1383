"""A lock and a write as one server-side call: a PL/pgSQL function per `LockedWrite`, made by
`migrate` (`install`), called with one statement by `cursors.locked_write`.

Why: the store's delete is the traveller's lock, then a write that must see every row a writer
who held the lock before it committed, so the two cannot be one SQL statement (a statement's
snapshot is taken before its lock is granted). Sent as two statements they cost a pipeline
(~0.1 ms of client CPU a call, bench/delete_floor.py). Inside a VOLATILE PL/pgSQL function
each statement takes its own snapshot, as two statements do, and the client sends one.

The function's name carries a hash of its whole definition, so the code that calls it and the
function it finds always agree: a process whose statement changed (an eraser registered,
another release) finds no function of that name and sends the two statements as before
(`present`), until the next `migrate` makes it. `install` drops the functions of a prefix it did
not make (earlier releases'): a process still calling one meets `UndefinedFunction`, forgets it
and falls back, with nothing written (one statement, its own implicit transaction).
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from psycopg import sql

from memoryadmin.db.sql import SQL_FUNCTION_PRESENT, SQL_FUNCTIONS_OF_PREFIX

# A statement's named placeholders (psycopg's `%(name)s`) become the function's parameters.
_PLACEHOLDER = re.compile(r"%\((\w+)\)s")
_QUOTE = "$memoryadmin_function$"
# The function (psycopg.sql: the name an identifier, the rest our own SQL); made by `install`.
_SQL_FUNCTION = """
CREATE OR REPLACE FUNCTION {name}({arguments})
RETURNS TABLE ({columns}) LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
AS {quote}
#variable_conflict use_column
{declare}BEGIN
  PERFORM count(*) FROM ({lock}) AS locked;
{body}
END
{quote}
"""
# How long a process trusts "absent" before it asks again (a migrate may have made it since).
ABSENT_SECONDS = 60.0


@dataclass(frozen=True)
class LockedWrite:
    """`lock` (a SELECT ... FOR UPDATE) then `write` (one statement returning rows), with named
    placeholders; the write's rows come back as `returns` ((column, SQL type)). `prefix`: the
    function's name before its hash (a short SQL identifier).

    The function takes `params` ((name, SQL type), in its argument order) and runs the lock,
    then `body` (PL/pgSQL statements, each `%(name)s` one of `params`, returning its rows with
    RETURN QUERY; `declare`: its variables) or, without a body, `write` itself. The two
    statements sent without the function (`cursors.locked_write`) take their placeholders from
    the same parameters, completed by `statement_params` when they need more (made only then)."""

    prefix: str
    lock: str
    write: str
    params: tuple[tuple[str, str], ...]
    returns: tuple[tuple[str, str], ...]
    body: str = ""
    declare: str = ""
    statement_params: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def _body(self, text: str) -> str:
        names = {name for name, _ in self.params}

        def argument(match: re.Match[str]) -> str:
            if match.group(1) not in names:
                raise ValueError(f"{self.prefix}: no parameter {match.group(1)!r}")
            return f"p_{match.group(1)}"

        # psycopg's `%%` is a literal `%` once the text is no longer a psycopg query.
        return _PLACEHOLDER.sub(argument, text).replace("%%", "%").strip()

    def _definition(self, name: str) -> str:
        if any(_QUOTE in text for text in (self.lock, self.write, self.body, self.declare)):
            raise ValueError(f"{self.prefix}: the statements hold the function's quote")
        body = self._body(self.body) if self.body else f"RETURN QUERY {self._body(self.write)};"

        def typed(prefix: str, pairs: tuple[tuple[str, str], ...]) -> sql.Composable:
            return sql.SQL(", ").join(
                sql.SQL("{} {}").format(sql.Identifier(f"{prefix}{n}"), sql.SQL(kind))
                for n, kind in pairs
            )

        return (
            sql.SQL(_SQL_FUNCTION)
            .format(
                name=sql.Identifier(name),
                arguments=typed("p_", self.params),
                # r_: an output column is a variable in the body: a name no table has.
                columns=typed("r_", self.returns),
                quote=sql.SQL(_QUOTE),
                lock=sql.SQL(self._body(self.lock)),
                declare=sql.SQL(f"DECLARE\n{self.declare.strip()}\n" if self.declare else ""),
                body=sql.SQL(body),
            )
            .as_string()
        )

    def params_of_statements(self, params: dict[str, Any]) -> dict[str, Any]:
        """The parameters of `lock` and `write` sent as statements, from the function's."""
        return params if self.statement_params is None else self.statement_params(params)

    @cached_property
    def usable(self) -> bool:
        """Whether it can be a function at all (every placeholder one of `params`)."""
        try:
            self._definition("f")
        except ValueError:
            return False
        return True

    @cached_property
    def name(self) -> str:
        digest = hashlib.sha256(self._definition("f").encode()).hexdigest()[:16]
        return f"{self.prefix}_{digest}"

    @cached_property
    def create_sql(self) -> str:
        return self._definition(self.name)

    @cached_property
    def call_sql(self) -> str:
        """The one statement that runs it (psycopg placeholders, each cast to its type)."""
        arguments = sql.SQL(", ").join(
            sql.SQL("{}::{}").format(sql.Placeholder(n), sql.SQL(kind)) for n, kind in self.params
        )
        return (
            sql.SQL("SELECT * FROM {}({})").format(sql.Identifier(self.name), arguments).as_string()
        )


def install(cursor: Any, writes: list[LockedWrite]) -> list[str]:
    """Make each function that is not there yet (a name is one definition) and drop the others
    of the same prefixes (earlier definitions). `cursor`: a synchronous cursor on the primary,
    in the caller's transaction (`migrate`'s post_migrate, also sent after each test's flush).
    Returns the names of the functions there now."""
    made = []
    for write in writes:
        if not write.usable:
            continue
        cursor.execute(SQL_FUNCTION_PRESENT, [write.name])
        if not cursor.fetchone()[0]:
            cursor.execute(write.create_sql)
        cursor.execute(SQL_FUNCTIONS_OF_PREFIX, [write.prefix.replace("_", r"\_") + r"\_%"])
        for (signature,) in cursor.fetchall():
            if signature.split("(", 1)[0] != write.name:
                drop = sql.SQL("DROP FUNCTION IF EXISTS {}").format(sql.SQL(signature))
                cursor.execute(drop.as_string())
        made.append(write.name)
    _known.clear()
    return made


# name -> (present, when asked); per process, for every database of the same code alike
_known: dict[str, tuple[bool, float]] = {}


async def present(conn: Any, write: LockedWrite) -> bool:
    """Whether `write`'s function exists, asked once per process (again `ABSENT_SECONDS` after
    an "absent")."""
    known = _known.get(write.name)
    now = time.monotonic()
    if known is not None and (known[0] or now - known[1] < ABSENT_SECONDS):
        return known[0]
    cursor = await conn.execute(SQL_FUNCTION_PRESENT, [write.name], prepare=False)
    (found,) = await cursor.fetchone()
    _known[write.name] = (bool(found), now)
    return bool(found)


def forget(write: LockedWrite) -> None:
    """Its function went (`UndefinedFunction`): absent until asked again."""
    _known[write.name] = (False, time.monotonic())
