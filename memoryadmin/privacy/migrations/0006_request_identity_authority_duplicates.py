"""Who is asking, and on whose behalf: how a request's traveller was identified, the person
acting for them, and the link of a duplicate to the open request it repeats. Requests made in
the portal before this were verified by their portal link; staff-recorded ones stay "" (not
recorded), which blocks nothing."""

import django.db.models.deletion
from django.db import migrations, models


def portal_requests_verified_by_link(apps, schema_editor):
    request = apps.get_model("privacy", "PrivacyRequest")
    request.objects.filter(channel="portal").update(identity_check="portal_link")


class Migration(migrations.Migration):
    dependencies = [
        ("privacy", "0005_restriction_webhook_events"),
    ]

    operations = [
        migrations.AddField(
            model_name="privacyrequest",
            name="agent_authority",
            field=models.CharField(blank=True, default="", max_length=500),
        ),
        migrations.AddField(
            model_name="privacyrequest",
            name="agent_name",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.AddField(
            model_name="privacyrequest",
            name="agent_relation",
            field=models.CharField(
                blank=True,
                choices=[
                    ("travel_agent", "Travel agent"),
                    ("family", "Family member"),
                    ("legal_representative", "Legal representative"),
                    ("other", "Other"),
                ],
                default="",
                max_length=24,
            ),
        ),
        migrations.AddField(
            model_name="privacyrequest",
            name="duplicate_of",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="duplicates",
                to="privacy.privacyrequest",
            ),
        ),
        migrations.AddField(
            model_name="privacyrequest",
            name="identity_check",
            field=models.CharField(
                blank=True,
                choices=[
                    ("portal_link", "Portal link (the traveller signed in through it)"),
                    ("airline_account", "Signed in to their airline account"),
                    ("checked", "Checked by phone or in person"),
                    ("unverified", "Not yet verified"),
                ],
                default="",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="privacyrequest",
            name="identity_checked",
            field=models.CharField(blank=True, default="", max_length=500),
        ),
        migrations.RunPython(portal_requests_verified_by_link, migrations.RunPython.noop),
    ]
