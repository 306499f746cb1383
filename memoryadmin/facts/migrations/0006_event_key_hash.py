"""Events store the keyed hash of their key (`key_hash`), and a fact's history is indexed by it.

Erasing a fact used to rewrite every event's key to its hash: an update of an indexed column,
so every index of the history table was rewritten for each event (a non-HOT update). Now the
hash is written with the event, history is found through (subject_id, key_hash, created_at),
and erasure only copies it over the unindexed `key` and blanks the snapshots. The index of the
staff-user FK becomes partial (most events have none), one index less to write per event.

The backfill computes the same HMAC as `facts.keyhash` (it needs this deployment's SECRET_KEY,
which is why it runs in Python, in batches, and not in SQL). Keys already erased are digests and
are their own hash.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

BATCH = 5000


def backfill(apps, schema_editor):
    from memoryadmin.facts.keyhash import event_key_hash

    FactEvent = apps.get_model("facts", "FactEvent")
    connection = schema_editor.connection
    last = 0
    while True:
        rows = list(
            FactEvent.objects.filter(pk__gt=last, key_hash="")
            .exclude(key="")
            .order_by("pk")
            .values_list("pk", "subject_id", "key")[:BATCH]
        )
        if not rows:
            return
        last = rows[-1][0]
        hashes = [(pk, event_key_hash(subject_id, key)) for pk, subject_id, key in rows]
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memory_fact_event AS e SET key_hash = v.hash"
                " FROM unnest(%s::bigint[], %s::text[]) AS v(id, hash) WHERE e.id = v.id",
                [[pk for pk, _ in hashes], [digest for _, digest in hashes]],
            )


class Migration(migrations.Migration):
    dependencies = [
        ("facts", "0005_event_value_revealed"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="factevent",
            name="key_hash",
            field=models.CharField(blank=True, default="", editable=False, max_length=41),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.RemoveIndex(model_name="factevent", name="fact_event_subject_key"),
        migrations.AddIndex(
            model_name="factevent",
            index=models.Index(
                fields=["subject_id", "key_hash", "created_at"], name="fact_event_subject_hash"
            ),
        ),
        # The FK's index becomes partial (not null): nearly every event is written by the agent,
        # extraction or the sweep, with no staff user, and no longer pays for it.
        migrations.AlterField(
            model_name="factevent",
            name="actor_user",
            field=models.ForeignKey(
                blank=True, db_index=False, null=True,
                on_delete=django.db.models.deletion.SET_NULL, related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddIndex(
            model_name="factevent",
            index=models.Index(
                condition=models.Q(("actor_user__isnull", False)), fields=["actor_user"],
                name="fact_event_actor_user",
            ),
        ),
        migrations.AddConstraint(
            model_name="factevent",
            constraint=models.CheckConstraint(
                condition=models.Q(("key", ""), ("key_hash__startswith", "#"), _connector="OR"),
                name="fact_event_key_hashed",
            ),
        ),
    ]
