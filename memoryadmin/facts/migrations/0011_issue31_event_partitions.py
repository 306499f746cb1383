"""Issue 31: the history (`memory_fact_event`) partitioned by month on `created_at` (`facts/partitions.py`): every row,
index and constraint kept; each partition keeps the free room of 0007 (fillfactor 70); the database's primary key becomes (id, created_at)."""

from django.db import migrations

from memoryadmin.db import convert_to_partitioned, convert_to_plain

TABLE = "memory_fact_event"
COLUMN = "created_at"
STORAGE = "fillfactor = 70"


def forwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        convert_to_partitioned(cursor, table=TABLE, column=COLUMN, storage=STORAGE)


def backwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        convert_to_plain(cursor, table=TABLE, storage=STORAGE)


class Migration(migrations.Migration):

    dependencies = [("facts", "0010_issue23_changed_at")]

    operations = [migrations.RunPython(forwards, backwards)]
