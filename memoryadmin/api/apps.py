from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "memoryadmin.api"
    label = "api"

    def ready(self) -> None:
        from memoryadmin.facts.erasure import register_eraser

        from . import schema  # noqa: F401 - registers the OpenAPI auth extension
        from .idempotency import IDEMPOTENCY_ERASE_SQL

        register_eraser("api.idempotency", sql=IDEMPOTENCY_ERASE_SQL)
