"""Look for a string in every column of every table: the test of "deleting is erasing"."""

from __future__ import annotations

from django.db import connection


def occurrences(text: str) -> dict[str, int]:
    """Rows per table with a column that contains `text`: the whole row's text form (all text
    and JSON columns)."""
    found = {}
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(
                f'SELECT count(*) FROM "{table}" AS t WHERE t::text LIKE %s',  # noqa: S608
                [f"%{text}%"],
            )
            count = cursor.fetchone()[0]
            if count:
                found[table] = count
    return found
