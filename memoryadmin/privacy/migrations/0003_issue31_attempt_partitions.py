"""Issue 31: the webhook delivery log (`privacy_webhook_attempt`) partitioned by month on `attempted_at` (`facts/partitions.py`): every row,
index and constraint kept; the database's primary key becomes (id, attempted_at)."""

from django.db import migrations

from memoryadmin.db import convert_to_partitioned, convert_to_plain

TABLE = "privacy_webhook_attempt"
COLUMN = "attempted_at"
STORAGE = ""


def forwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        convert_to_partitioned(cursor, table=TABLE, column=COLUMN, storage=STORAGE)


def backwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        convert_to_plain(cursor, table=TABLE, storage=STORAGE)


class Migration(migrations.Migration):

    dependencies = [
        ("privacy", "0002_recipient_traveller_names"),
        ("facts", "0011_issue31_event_partitions"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
