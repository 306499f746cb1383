from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "memoryadmin.portal"
    label = "portal"
    verbose_name = "Traveller privacy portal"
    default_auto_field = "django.db.models.BigAutoField"
