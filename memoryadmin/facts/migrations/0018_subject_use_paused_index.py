"""Issue 42, the agent's reads at the floor: whether a traveller paused the use of memory is
asked on every read; the few who did are found through this partial index (an index-only
lookup) instead of a fetch of the traveller's row."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("facts", "0017_version_redaction")]

    operations = [
        migrations.AddIndex(
            model_name="subject",
            index=models.Index(
                condition=models.Q(("memory_use_paused", True)),
                fields=["subject_id"],
                name="memory_subject_use_paused",
            ),
        ),
    ]
