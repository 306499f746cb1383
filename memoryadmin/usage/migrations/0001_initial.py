from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [("facts", "0009_issue21_evidence")]

    operations = [
        migrations.CreateModel(
            name="MemoryUse",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("subject_id", models.CharField(max_length=128)),
                ("key_hash", models.CharField(max_length=41)),
                ("fact_id", models.BigIntegerField()),
                ("session_tag", models.CharField(blank=True, default="", max_length=80)),
                ("turn_id", models.CharField(blank=True, default="", max_length=64)),
                (
                    "how",
                    models.CharField(
                        choices=[("injected", "Given in the prompt"), ("recalled", "Recalled")],
                        max_length=8,
                    ),
                ),
                ("used_at", models.DateTimeField()),
            ],
            options={
                "db_table": "memory_use",
                "indexes": [
                    models.Index(
                        fields=["subject_id", "key_hash", "used_at"], name="memory_use_fact"
                    ),
                    models.Index(fields=["fact_id", "used_at"], name="memory_use_fact_id"),
                    models.Index(
                        fields=["subject_id", "session_tag", "turn_id"], name="memory_use_turn"
                    ),
                    models.Index(fields=["used_at"], name="memory_use_used_at"),
                ],
            },
        ),
    ]
