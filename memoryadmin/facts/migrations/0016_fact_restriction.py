"""A fact can be restricted (GDPR Art. 18): kept, unchanged, not used while it is checked.
Three columns with database defaults (no table rewrite); the two new event actions are choices
only (no SQL)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('facts', '0015_issue31_held_index'),
    ]

    operations = [
        migrations.AddField(
            model_name='memoryfact',
            name='restricted_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='memoryfact',
            name='restricted_by',
            field=models.CharField(blank=True, choices=[('staff', 'Staff'), ('customer', 'Traveller')], db_default='', default='', max_length=16),
        ),
        migrations.AddField(
            model_name='memoryfact',
            name='restriction_note',
            field=models.CharField(blank=True, db_default='', default='', max_length=500),
        ),
        migrations.AlterField(
            model_name='factevent',
            name='action',
            field=models.CharField(choices=[('created', 'Created'), ('updated', 'Updated'), ('expired', 'Expired'), ('expiry_changed', 'Expiry changed'), ('flagged_sensitive', 'Flagged sensitive'), ('unflagged_sensitive', 'Sensitive flag removed'), ('approved', 'Approved'), ('rejected', 'Rejected'), ('deleted', 'Deleted'), ('subject_cleared', 'All facts cleared'), ('forgotten', 'Erased with everything else'), ('preferences_changed', 'Memory preferences changed'), ('legal_hold_placed', 'Legal hold placed'), ('legal_hold_lifted', 'Legal hold lifted'), ('value_revealed', 'Sensitive value revealed'), ('quality_marked', 'Quality checked'), ('restricted', 'Use stopped while checked'), ('unrestricted', 'Use resumed')], max_length=32),
        ),
    ]
