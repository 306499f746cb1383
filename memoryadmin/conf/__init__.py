"""The settings, by concern. `memoryadmin.settings` (DJANGO_SETTINGS_MODULE) is the entry point and
imports each setting from these modules by name; every environment variable is read through the
typed reader in `env.py`, with its one default where it is read."""
