from django.apps import AppConfig


class StaffConfig(AppConfig):
    name = "memoryadmin.staff"
    label = "staff"

    def ready(self) -> None:
        from . import (
            middleware,  # noqa: F401  (connects the login signal receiver)
            security,  # noqa: F401 - connects the login signal for the second factor
        )
