"""A request received on a day keeps the day, not a made-up hour: `received_on` (the airline's
calendar day, always), `received_at` only when the moment is known (a portal request's).

Until now staff entered calls, e-mails and letters as a day and the clock stored noon of it (or
the moment of entry, if earlier): those moments were made up, so they go; portal requests keep
theirs. Lists sort by when a request was recorded (`created_at`)."""

from django.conf import settings
from django.db import migrations, models

FILL = """
UPDATE privacy_request
SET received_on = (received_at AT TIME ZONE %s)::date,
    received_at = CASE WHEN channel = 'portal' THEN received_at END
"""

UNFILL = """
UPDATE privacy_request
SET received_at = (received_on + time '12:00') AT TIME ZONE %s
WHERE received_at IS NULL
"""


def fill(apps, schema_editor):
    schema_editor.execute(FILL, [settings.TIME_ZONE])


def unfill(apps, schema_editor):
    schema_editor.execute(UNFILL, [settings.TIME_ZONE])


class Migration(migrations.Migration):
    dependencies = [("privacy", "0003_issue31_attempt_partitions")]

    operations = [
        migrations.AddField(
            model_name="privacyrequest",
            name="received_on",
            field=models.DateField(null=True),
        ),
        migrations.AlterField(
            model_name="privacyrequest",
            name="received_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(fill, unfill, elidable=False),
        migrations.AlterField(
            model_name="privacyrequest",
            name="received_on",
            field=models.DateField(),
        ),
        migrations.AlterModelOptions(
            name="privacyrequest",
            options={"ordering": ["-created_at", "-id"]},
        ),
    ]
