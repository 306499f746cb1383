"""Random public job ids (filled for existing rows one by one, then made unique) and what the
reaper needs to re-send a job the broker lost: when it was last sent, how often, and whether a
failed job may run again when its turn is posted again."""

import uuid

from django.db import migrations, models


def fill_public_ids(apps, schema_editor):
    ExtractionJob = apps.get_model("extraction", "ExtractionJob")
    for job in ExtractionJob.objects.filter(public_id__isnull=True).only("pk").iterator():
        ExtractionJob.objects.filter(pk=job.pk).update(public_id=uuid.uuid4())


class Migration(migrations.Migration):
    dependencies = [("extraction", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="extractionjob",
            name="public_id",
            field=models.UUIDField(null=True, editable=False),
        ),
        migrations.RunPython(fill_public_ids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="extractionjob",
            name="public_id",
            field=models.UUIDField(default=uuid.uuid4, unique=True, editable=False),
        ),
        migrations.AddField(
            model_name="extractionjob",
            name="sent_at",
            field=models.DateTimeField(
                blank=True, null=True,
                help_text="When the job was last handed to the broker; empty while it never was.",
            ),
        ),
        migrations.AddField(
            model_name="extractionjob",
            name="sends",
            field=models.PositiveIntegerField(
                default=0, help_text="How many times the job was handed to the broker."
            ),
        ),
        migrations.AddField(
            model_name="extractionjob",
            name="retryable",
            field=models.BooleanField(
                default=False,
                help_text="Failed for a reason outside the turn (lost, gave up on retries): "
                "posting the same turn again runs it again.",
            ),
        ),
    ]
