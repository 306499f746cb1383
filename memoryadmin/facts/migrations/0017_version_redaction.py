"""A privacy admin's redaction of one past version is an event in the fact's history
(`version_redacted`). Choices only: no change to the table."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('facts', '0016_fact_restriction'),
    ]

    operations = [
        migrations.AlterField(
            model_name='factevent',
            name='action',
            field=models.CharField(choices=[('created', 'Created'), ('updated', 'Updated'), ('expired', 'Expired'), ('expiry_changed', 'Expiry changed'), ('flagged_sensitive', 'Flagged sensitive'), ('unflagged_sensitive', 'Sensitive flag removed'), ('approved', 'Approved'), ('rejected', 'Rejected'), ('deleted', 'Deleted'), ('subject_cleared', 'All facts cleared'), ('forgotten', 'Erased with everything else'), ('preferences_changed', 'Memory preferences changed'), ('legal_hold_placed', 'Legal hold placed'), ('legal_hold_lifted', 'Legal hold lifted'), ('value_revealed', 'Sensitive value revealed'), ('quality_marked', 'Quality checked'), ('version_redacted', 'Version redacted'), ('restricted', 'Use stopped while checked'), ('unrestricted', 'Use resumed')], max_length=32),
        ),
    ]
