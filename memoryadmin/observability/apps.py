from django.apps import AppConfig


class ObservabilityConfig(AppConfig):
    name = "memoryadmin.observability"
    label = "observability"
    verbose_name = "Observability"

    def ready(self) -> None:
        # The request id travels from a web request to the Celery tasks it queues.
        from . import requestid

        requestid.connect_celery_signals()
