"""The receipt lookup moved to its own column and index (facts 0007): the expression index on
`after` made every redaction of the history rewrite all of its indexes."""

from importlib import import_module

from django.db import migrations

_created = import_module("memoryadmin.portal.migrations.0002_receipt_lookup_index")


class Migration(migrations.Migration):
    dependencies = [("portal", "0002_receipt_lookup_index"), ("facts", "0007_event_receipt")]

    operations = [
        migrations.RunPython(_created._run(_created.DROP), _created._run(_created.CREATE))
    ]
