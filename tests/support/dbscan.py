"""Look for a string in every column of every table: the test of "deleting is erasing"."""

from __future__ import annotations

from django.db import connection


def occurrences(text: str) -> dict[str, int]:
    """Rows per table with a column that contains `text`: the whole row's text form on
    PostgreSQL (all text and JSON columns), each column's on SQLite (the embedded default)."""
    found = {}
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            if connection.vendor == "postgresql":
                where, params = "t::text LIKE %s", [f"%{text}%"]
            else:
                columns = connection.introspection.get_table_description(cursor, table)
                where = " OR ".join(
                    f'instr(CAST(t."{column.name}" AS TEXT), %s) > 0' for column in columns
                )
                params = [text] * len(columns)
            cursor.execute(f'SELECT count(*) FROM "{table}" AS t WHERE {where}', params)  # noqa: S608
            count = cursor.fetchone()[0]
            if count:
                found[table] = count
    return found
