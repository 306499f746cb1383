#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    # The embedded PostgreSQL without a SECRET_KEY (a checkout on a developer's machine, its
    # commands run through `python -m memoryadmin.embedded_db run --`) is development, as
    # `make run` and the README's commands assume. Production sets a key and its own
    # DATABASE_URL, and DEBUG=false (production.env.example).
    if not os.environ.get("SECRET_KEY") and os.environ.get("EMBEDDED_POSTGRES") == "1":
        os.environ.setdefault("DEBUG", "true")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        from django.conf import settings

        settings.INSTALLED_APPS  # noqa: B018 - reads the settings module, which checks the env
    except ImproperlyConfigured as exc:  # a setting to fix, not a bug: one line, no traceback
        sys.exit(f"manage.py: {exc}")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
