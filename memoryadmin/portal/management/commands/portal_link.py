"""Print a portal link for a traveller: for demos, support, and `make run`."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from memoryadmin.facts.errors import FactInvalid
from memoryadmin.portal.services import portal_link_issue


class Command(BaseCommand):
    help = "Print a single-use link into the privacy portal for one traveller."

    def add_arguments(self, parser) -> None:
        parser.add_argument("subject_id")
        parser.add_argument(
            "--base-url",
            default=settings.PORTAL_BASE_URL or "http://127.0.0.1:8000",
            help="Where travellers reach this server (default: PORTAL_BASE_URL or localhost).",
        )
        parser.add_argument(
            "--minutes",
            type=int,
            default=settings.PORTAL_LINK_TTL_MINUTES,
            help="How long the link stays valid (default: %(default)s).",
        )

    def handle(self, *args, subject_id: str, base_url: str, minutes: int, **options) -> None:
        if minutes < 1:
            raise CommandError("--minutes must be at least 1.")
        try:
            link = portal_link_issue(
                subject_id=subject_id,
                issued_by="manage.py portal_link",
                valid_for=timedelta(minutes=minutes),
            )
        except (FactInvalid, ValidationError) as exc:
            raise CommandError(str(getattr(exc, "message", exc))) from exc
        path = reverse("portal:open", kwargs={"secret": link.secret})
        self.stdout.write(f"{base_url.rstrip('/')}{path}")
