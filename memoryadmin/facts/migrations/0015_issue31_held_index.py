"""Issue 31, retention without reading a month for the held travellers' rows: the few held
travellers are found through this partial index, then their rows by (subject_id, time)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("facts", "0014_issue31_distribution_keys")]

    operations = [
        migrations.AddIndex(
            model_name="subject",
            index=models.Index(
                condition=models.Q(("legal_hold", True)),
                fields=["subject_id"],
                name="memory_subject_held",
            ),
        ),
    ]
