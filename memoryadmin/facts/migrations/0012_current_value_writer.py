"""Issue 32: who rewrote a fact's current value, when a person did. Two columns on memory_fact,
filled for the facts already held from their history: the latest event that changed the value
(created, or updated with a different value); when it is a staff member's or the traveller's
update, its kind, and for staff their display name (the account's full name, else the name the
event recorded). The traveller's id is never copied."""

from django.db import migrations, models

BACKFILL = """
UPDATE memory_fact AS f
SET rewritten_by = w.actor_kind,
    rewritten_by_label = CASE
        WHEN w.actor_kind = 'staff'
        THEN left(coalesce(nullif(trim(u.first_name || ' ' || u.last_name), ''), w.actor_label), 150)
        ELSE ''
    END
FROM (
    SELECT DISTINCT ON (e.subject_id, e.key)
           e.subject_id, e.key, e.action, e.actor_kind, e.actor_label, e.actor_user_id
    FROM memory_fact_event AS e
    WHERE e.action = 'created'
       OR (e.action = 'updated' AND e.before ->> 'value' IS DISTINCT FROM e.after ->> 'value')
    ORDER BY e.subject_id, e.key, e.created_at DESC, e.id DESC
) AS w
LEFT JOIN auth_user AS u ON u.id = w.actor_user_id
WHERE f.subject_id = w.subject_id AND f.key = w.key
  AND w.action = 'updated' AND w.actor_kind IN ('staff', 'customer')
"""


class Migration(migrations.Migration):
    dependencies = [
        ("facts", "0011_issue31_event_partitions"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.AddField(
            model_name="memoryfact",
            name="rewritten_by",
            field=models.CharField(
                blank=True,
                choices=[("staff", "Staff"), ("customer", "Traveller")],
                db_default="",
                default="",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="memoryfact",
            name="rewritten_by_label",
            field=models.CharField(blank=True, db_default="", default="", max_length=150),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
