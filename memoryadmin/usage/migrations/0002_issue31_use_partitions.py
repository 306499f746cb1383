"""Issue 31: the use receipts (`memory_use`) partitioned by month on `used_at` (`facts/partitions.py`): every row,
index and constraint kept; the database's primary key becomes (id, used_at)."""

from django.db import migrations

from memoryadmin.db import convert_to_partitioned, convert_to_plain

TABLE = "memory_use"
COLUMN = "used_at"
STORAGE = ""


def forwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        convert_to_partitioned(cursor, table=TABLE, column=COLUMN, storage=STORAGE)


def backwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        convert_to_plain(cursor, table=TABLE, storage=STORAGE)


class Migration(migrations.Migration):

    dependencies = [("usage", "0001_initial"), ("facts", "0011_issue31_event_partitions")]

    operations = [migrations.RunPython(forwards, backwards)]
