"""A small partial index for looking up a "forget everything" receipt by its number.

The receipt lives in the subject_cleared event (`after->'receipt'`); without this, finding one
number would scan the whole history table. Only subject_cleared rows are indexed, so the
agent's hot path (which writes other events) does not pay for it.
"""

from django.db import migrations

CREATE = [
    "CREATE INDEX IF NOT EXISTS fact_event_clear_receipt ON memory_fact_event"
    " ((after -> 'receipt')) WHERE action = 'subject_cleared'",
]
DROP = ["DROP INDEX IF EXISTS fact_event_clear_receipt"]


def _run(statements):
    def run(apps, schema_editor):
        for statement in statements:
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("portal", "0001_initial"), ("facts", "0001_initial")]

    operations = [migrations.RunPython(_run(CREATE), _run(DROP))]
