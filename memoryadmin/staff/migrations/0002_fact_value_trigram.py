"""A trigram index on fact values, so the travellers search (ILIKE '%word%') stays an index scan."""

from django.db import migrations

CREATE = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS memory_fact_value_trgm ON memory_fact USING gin (value gin_trgm_ops)",
]
DROP = ["DROP INDEX IF EXISTS memory_fact_value_trgm"]


def _run(statements):
    def run(apps, schema_editor):
        for statement in statements:
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("staff", "0001_role_groups"), ("facts", "0001_initial")]

    operations = [migrations.RunPython(_run(CREATE), _run(DROP))]
