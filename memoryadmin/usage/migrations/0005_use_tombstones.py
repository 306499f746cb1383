"""A receipt of an erased fact stays as a tombstone, marked with when the fact was erased."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('usage', '0004_issue31_use_key'),
    ]

    operations = [
        migrations.AddField(
            model_name='memoryuse',
            name='erased_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
