from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "memoryadmin.api"
    label = "api"

    def ready(self) -> None:
        from memoryadmin.facts.erasure import register_eraser
        from memoryadmin.facts.redaction import register_version_redactor

        from . import schema  # noqa: F401 - registers the OpenAPI auth extension
        from .idempotency import IDEMPOTENCY_ERASE_SQL, IDEMPOTENCY_REDACT_SQL

        register_eraser("api.idempotency", sql=IDEMPOTENCY_ERASE_SQL)
        register_version_redactor("api.idempotency", sql=IDEMPOTENCY_REDACT_SQL)
