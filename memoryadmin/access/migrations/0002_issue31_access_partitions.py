"""Issue 31: the staff access record (`staff_access`) partitioned by month on `at` (`facts/partitions.py`): every row,
index and constraint kept, and the append-only trigger (on the parent, so on every partition); the database's primary key becomes (id, at)."""

from django.db import migrations

from memoryadmin.db import convert_to_partitioned, convert_to_plain

TABLE = "staff_access"
COLUMN = "at"
STORAGE = ""


def forwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        convert_to_partitioned(cursor, table=TABLE, column=COLUMN, storage=STORAGE)


def backwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        convert_to_plain(cursor, table=TABLE, storage=STORAGE)


class Migration(migrations.Migration):

    dependencies = [("access", "0001_initial"), ("facts", "0011_issue31_event_partitions")]

    operations = [migrations.RunPython(forwards, backwards)]
