"""The trigram index on fact values covers only facts that are not sensitive, as the search does:
no index holds a sensitive value for the travellers search to find."""

from django.db import migrations

PARTIAL = [
    "DROP INDEX IF EXISTS memory_fact_value_trgm",
    "CREATE INDEX memory_fact_value_trgm ON memory_fact USING gin (value gin_trgm_ops) "
    "WHERE NOT sensitive",
]
WHOLE = [
    "DROP INDEX IF EXISTS memory_fact_value_trgm",
    "CREATE INDEX memory_fact_value_trgm ON memory_fact USING gin (value gin_trgm_ops)",
]


def _run(statements):
    def run(apps, schema_editor):
        for statement in statements:
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("staff", "0002_fact_value_trigram")]

    operations = [migrations.RunPython(_run(PARTIAL), _run(WHOLE))]
