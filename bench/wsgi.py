"""gunicorn entry point for the benchmark: the real application with bench/urls.py on top."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

from django.conf import settings  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402

application = get_wsgi_application()
settings.ROOT_URLCONF = "bench.urls"
