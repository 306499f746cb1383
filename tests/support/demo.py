"""Loading the demo in a test: with DEBUG on (seed_demo is development only) and at a free local
address, where the seed serves the demo's webhook receiver while it runs."""

from __future__ import annotations

import socket

from django.core.management import call_command


def free_url() -> str:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def seed_demo(settings, **options) -> str:
    """Run seed_demo as `make run` does; returns the address it was given."""
    base_url = options.pop("base_url", None) or free_url()
    debug = settings.DEBUG
    settings.DEBUG = True
    try:
        call_command("seed_demo", base_url=base_url, **options)
    finally:
        settings.DEBUG = debug
    return base_url
