"""The memory settings singleton exists from the start, so a read never has to create it."""

from django.db import migrations


def create_row(apps, schema_editor):
    MemorySettings = apps.get_model("facts", "MemorySettings")
    MemorySettings.objects.get_or_create(pk=1)


class Migration(migrations.Migration):
    dependencies = [("facts", "0001_initial")]

    operations = [migrations.RunPython(create_row, migrations.RunPython.noop)]
