from django.db import migrations, models

from memoryadmin.access import sql


def _append_only(apps, schema_editor):
    schema_editor.execute(sql.SQL_APPEND_ONLY_FUNCTION)
    schema_editor.execute(sql.SQL_APPEND_ONLY_TRIGGER)


def _drop_append_only(apps, schema_editor):
    schema_editor.execute(sql.SQL_DROP_APPEND_ONLY)


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="StaffAccess",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("at", models.DateTimeField()),
                ("staff_user_id", models.BigIntegerField(null=True)),
                ("staff_username", models.CharField(max_length=150)),
                ("subject_id", models.CharField(blank=True, default="", max_length=128)),
                ("what", models.CharField(choices=[("traveller", "traveller page"), ("fact_history", "fact history"), ("timeline", "timeline"), ("reveal", "reveal of a sensitive value"), ("export", "export made for them"), ("privacy_request", "privacy-request page"), ("search", "search that returned them"), ("sign_in", "sign-in")], max_length=20)),
                ("login_method", models.CharField(blank=True, choices=[("sso", "single sign-on"), ("password", "local password (break-glass)"), ("", "unknown")], default="", max_length=10)),
                ("address", models.GenericIPAddressField(blank=True, null=True)),
            ],
            options={
                "db_table": "staff_access",
                "indexes": [
                    models.Index(fields=["subject_id", "at"], name="staff_access_subject_at"),
                    models.Index(fields=["staff_username", "at"], name="staff_access_staff_at"),
                    models.Index(fields=["at"], name="staff_access_at"),
                ],
            },
        ),
        migrations.RunPython(_append_only, _drop_append_only),
    ]
