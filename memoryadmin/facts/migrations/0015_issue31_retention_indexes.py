"""Issue 31, retention by month without reading the month: the live facts' events (rows whose
key is still plain) and the held travellers are found through these two partial indexes."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('facts', '0014_issue31_distribution_keys'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name='factevent',
            index=models.Index(condition=models.Q(('key', models.F('key_hash')), _negated=True), fields=['created_at'], name='fact_event_plain_key'),
        ),
        migrations.AddIndex(
            model_name='subject',
            index=models.Index(condition=models.Q(('legal_hold', True)), fields=['subject_id'], name='memory_subject_held'),
        ),
    ]
