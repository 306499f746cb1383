"""manage.py demo_totp_code [USERNAME]  (development only)

Prints the current authenticator code of a demo account, so that `make run` can be tried
without a phone. Refused when DEBUG is off: in production the code comes from the person's app.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice


class Command(BaseCommand):
    help = "Development only: print the current authenticator code of a demo staff user."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", nargs="?", default="privacy")

    def handle(self, *args: Any, username: str, **options: Any) -> None:
        if not settings.DEBUG:
            raise CommandError("Development only: run with DEBUG=true (as `make run` does).")
        device = TOTPDevice.objects.filter(user__username=username, confirmed=True).first()
        if device is None:
            raise CommandError(f"{username} has no authenticator; run seed_demo first.")
        totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
        self.stdout.write(f"{totp.token():0{device.digits}d}")
