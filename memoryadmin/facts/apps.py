from django.apps import AppConfig


class FactsConfig(AppConfig):
    name = "memoryadmin.facts"
    label = "facts"

    def ready(self) -> None:
        # Make the Celery app current in every Django process, so shared_task binds to it.
        from memoryadmin.celery import app  # noqa: F401
