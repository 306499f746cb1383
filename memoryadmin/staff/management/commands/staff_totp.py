"""manage.py staff_totp USERNAME [--reset]

Sets up the authenticator app (TOTP) of a staff user, which privacy admins need to sign in, and
prints the key once, as an otpauth:// address (for a QR code) and as base32 for typing in."""

from __future__ import annotations

import base64
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django_otp.plugins.otp_totp.models import TOTPDevice


class Command(BaseCommand):
    help = "Set up a staff user's authenticator app (TOTP) and print its key once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--reset",
            action="store_true",
            help="Replace an existing authenticator (the old one stops working).",
        )

    def handle(self, *args: Any, username: str, reset: bool, **options: Any) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        existing = TOTPDevice.objects.filter(user=user)
        if existing.exists() and not reset:
            raise CommandError(
                f"{username} already has an authenticator; use --reset to replace it."
            )
        existing.delete()
        device = TOTPDevice.objects.create(user=user, name="authenticator app", confirmed=True)
        secret = base64.b32encode(device.bin_key).decode()
        self.stdout.write(
            f"Authenticator set up for {username}. Add this key to the app now; it "
            "is not shown again."
        )
        self.stdout.write(f"  key (base32): {secret}")
        self.stdout.write(f"  otpauth URI:  {device.config_url}")
