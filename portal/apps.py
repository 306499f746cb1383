from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Traveller privacy portal"
    default_auto_field = "django.db.models.BigAutoField"
