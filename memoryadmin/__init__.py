"""memoryadmin: the system of record for what the airline's agent remembers about travellers."""

from .celery import app as celery_app

__all__ = ["celery_app"]
