"""The webhook events of a restriction: memory.restricted, memory.unrestricted, memory.rectified."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('privacy', '0004_received_date_only'),
    ]

    operations = [
        migrations.AlterField(
            model_name='outboxevent',
            name='event_type',
            field=models.CharField(choices=[('memory.fact.erased', 'A fact was erased'), ('memory.subject.erased', "A traveller's memory was erased"), ('memory.fact.corrected', 'A fact was corrected'), ('privacy_request.completed', 'A privacy request was completed'), ('memory.rectified', 'A fact was rectified'), ('memory.restricted', "A fact's use was stopped while checked"), ('memory.unrestricted', "A fact's use resumed")], max_length=40),
        ),
    ]
