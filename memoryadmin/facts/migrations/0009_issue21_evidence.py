"""Issue 21: the traveller's own words behind each fact's current version and who wrote it;
how long use receipts are kept (a memory setting with its own policy event)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("facts", "0008_issue22_policy_actions")]

    operations = [
        migrations.AlterField(
            model_name="policyevent",
            name="action",
            field=models.CharField(
                choices=[
                    ("settings_changed", "Memory settings changed"),
                    ("rule_created", "Retention rule added"),
                    ("rule_updated", "Retention rule changed"),
                    ("rule_deleted", "Retention rule deleted"),
                    ("token_issued", "Service token created"),
                    ("token_revoked", "Service token revoked"),
                    ("privacy_request", "Privacy request step"),
                    ("webhook_recipient", "Webhook recipient changed"),
                    ("webhook_replayed", "Webhook delivery replayed"),
                    ("use_retention_changed", "Use receipts retention changed"),
                ],
                max_length=32,
            ),
        ),
        migrations.AddField(
            model_name="memorysettings",
            name="use_retention_days",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="memoryfact",
            name="evidence",
            field=models.CharField(blank=True, db_default="", default="", max_length=200),
        ),
        migrations.AddField(
            model_name="memoryfact",
            name="evidence_origin",
            field=models.CharField(
                blank=True,
                choices=[
                    ("extraction", "Learned from a conversation"),
                    ("agent", "Saved by the agent"),
                    ("staff", "Entered by support staff"),
                    ("customer", "Entered by the traveller"),
                    ("import", "Imported"),
                ],
                db_default="",
                default="",
                max_length=16,
            ),
        ),
    ]
