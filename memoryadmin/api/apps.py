from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "memoryadmin.api"
    label = "api"

    def ready(self) -> None:
        from . import schema  # noqa: F401 - registers the OpenAPI auth extension
