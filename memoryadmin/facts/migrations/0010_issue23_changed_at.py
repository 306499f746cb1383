"""Issue 23: `changed_at`, when anything about a fact last changed (what the desk shows as
"Updated"), apart from `updated_at`, which retention counts from. Existing rows start from
their `updated_at`: the closest known time without reading every fact's history. And the
`forgotten` event action: one per fact that "forget everything" erased, with its summary."""

import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('facts', '0009_issue21_evidence'),
    ]

    operations = [
        migrations.AddField(
            model_name='memoryfact',
            name='changed_at',
            field=models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), help_text='When anything about the fact last changed (its version).'),
        ),
        migrations.AlterField(
            model_name='factevent',
            name='action',
            field=models.CharField(choices=[('created', 'Created'), ('updated', 'Updated'), ('expired', 'Expired'), ('expiry_changed', 'Expiry changed'), ('flagged_sensitive', 'Flagged sensitive'), ('unflagged_sensitive', 'Sensitive flag removed'), ('approved', 'Approved'), ('rejected', 'Rejected'), ('deleted', 'Deleted'), ('subject_cleared', 'All facts cleared'), ('forgotten', 'Erased with everything else'), ('preferences_changed', 'Memory preferences changed'), ('legal_hold_placed', 'Legal hold placed'), ('legal_hold_lifted', 'Legal hold lifted'), ('value_revealed', 'Sensitive value revealed')], max_length=32),
        ),
        migrations.RunSQL(
            "UPDATE memory_fact SET changed_at = updated_at", migrations.RunSQL.noop
        ),
    ]
