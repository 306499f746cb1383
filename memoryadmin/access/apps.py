from django.apps import AppConfig


class AccessConfig(AppConfig):
    name = "memoryadmin.access"
    label = "access"
    verbose_name = "Staff access record"

    def ready(self) -> None:
        from . import writer

        writer.connect()
