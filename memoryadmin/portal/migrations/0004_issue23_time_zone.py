"""The traveller's time zone, passed by the link's issuer and carried into the session."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("portal", "0003_drop_receipt_expression_index")]

    operations = [
        migrations.AddField(
            model_name="portallink",
            name="time_zone",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.AddField(
            model_name="portalsession",
            name="time_zone",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
    ]
