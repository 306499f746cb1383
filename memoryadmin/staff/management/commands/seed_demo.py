"""Demo data for `make run`: travellers with realistic facts and five weeks of history, and one
staff user per role. Idempotent: travellers already present are left alone, users keep their
passwords.

The portal's demo travellers, FF-100231 (`make run` prints a link for them) and FF-100232 (the
same in Traditional Chinese: `make portal-link SUBJECT=FF-100232`), show every differentiator on
the first visit: facts learned with their own words and one saved by the assistant, use
receipts from several conversations, an earlier "forget everything" with its receipt and the
erasure request it closed (acknowledged over HTTP by the demo's webhook recipient, named for
travellers in both languages), a download and a correction as requests, a fact whose use they
stopped while it is checked (its restriction request open), an earlier version redacted by the
privacy admin, and staff looks. What happened when is in `memoryadmin/staff/demo/story.py`."""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django_otp.plugins.otp_totp.models import TOTPDevice

from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import RetentionRule, Subject
from memoryadmin.privacy.models import WebhookRecipient
from memoryadmin.privacy.recipients import webhook_recipient_add
from memoryadmin.privacy.signing_secrets import seal
from memoryadmin.quality.models import QualitySample
from memoryadmin.staff.demo import receiver, story
from memoryadmin.staff.demo.clock import story_clock
from memoryadmin.staff.demo.data import (
    DEMO_RECIPIENT,
    DEMO_RETENTION_RULES,
    DEMO_TOTP_KEY,
    DEMO_USERS,
    PORTAL_DEMO,
    ROLE_WORDS,
    TRAVELLERS,
)
from memoryadmin.staff.roles import PRIVACY_ADMIN, ROLES

__all__ = ["DEMO_RETENTION_RULES", "DEMO_TOTP_KEY", "Command"]


class Command(BaseCommand):
    help = "Load demo travellers, facts, history and staff users (safe to run again)."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--base-url",
            default="http://127.0.0.1:8000",
            help="Where the demo is served, for the addresses it prints (make run passes its own).",
        )

    def handle(self, *args, **options) -> None:
        if not settings.DEBUG:
            # Public passwords, an authenticator key and a webhook secret: never in production.
            raise CommandError("Development only: run with DEBUG=true (as `make run` does).")
        # Demo tasks run eagerly in this process: their one-line "succeeded" records are noise here.
        logging.getLogger("celery.app.trace").setLevel(logging.WARNING)
        base_url = options["base_url"].rstrip("/")
        # The demo's deliveries go out over HTTP to its receiver, at the address the demo is
        # served on: served here while seeding, since `make run` starts its server afterwards.
        with receiver.serving(base_url), story_clock() as clock, transaction.atomic():
            users = self._users()
            self._retention_rules()
            self._recipient(base_url)
            created = self._travellers(story.Story(clock, users))
        self.stdout.write(self.style.SUCCESS(f"Demo data ready: {created} new travellers."))
        self.stdout.write(f"Log in at {base_url}/login/ as:")
        for username, password, role in DEMO_USERS:
            self.stdout.write(f"  {ROLE_WORDS[role]:<14} {username} / {password}")
        self.stdout.write(
            "  The privacy admin also enters an authenticator code: get the current one with\n"
            "    make demo-code\n"
            "  (or add the key GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ to any TOTP app)."
        )
        self.stdout.write(f"Agent API docs: {base_url}/api/v1/docs/")
        self.stdout.write(
            f"Webhooks go to the demo's receiver at {receiver.receiver_url(base_url)}"
        )

    def _users(self) -> dict[str, object]:
        groups = {role: Group.objects.get_or_create(name=role)[0] for role in ROLES}
        users = {}
        for username, password, role in DEMO_USERS:
            user, made = get_user_model().objects.get_or_create(
                username=username, defaults={"is_staff": role == PRIVACY_ADMIN}
            )
            if made:
                user.set_password(password)
                user.save()
            user.groups.add(groups[role])
            if role == PRIVACY_ADMIN:
                TOTPDevice.objects.get_or_create(
                    user=user,
                    defaults={
                        "name": "demo authenticator",
                        "key": DEMO_TOTP_KEY,
                        "confirmed": True,
                    },
                )
            users[role] = user
        return users

    def _travellers(self, plot: story.Story) -> int:
        """Every new traveller's story, and the weekly quality draws (unless drawn before),
        played in time order over the five weeks."""
        existing = set(Subject.objects.values_list("subject_id", flat=True))
        created = 0
        for index, (subject_id, facts, learned_by) in enumerate(TRAVELLERS):
            if subject_id in existing:
                continue
            created += 1
            if subject_id in PORTAL_DEMO:
                story.portal_traveller(plot, subject_id, facts, late=index)
            else:
                story.traveller(plot, index, subject_id, facts, learned_by)
            if subject_id == story.AGENT_DEMO:
                story.agent_made_request(plot, subject_id)
        if not QualitySample.objects.exists():
            story.quality_weeks(plot)
        plot.play()
        return created

    def _recipient(self, base_url: str) -> WebhookRecipient:
        """The demo's webhook recipient, told about every erasure: the demo's own receiver at the
        address it is served on (set again on every run, as the port may change), holding the
        receiver's public demo secret."""
        recipient = WebhookRecipient.objects.filter(name=DEMO_RECIPIENT["name"]).first()
        url = receiver.receiver_url(base_url)
        if recipient is None:
            recipient, _secret = webhook_recipient_add(
                url=url,
                events=None,
                actor=Actor.system("seed_demo"),
                reason="demo data",
                **DEMO_RECIPIENT,
            )
        WebhookRecipient.objects.filter(pk=recipient.pk).update(
            url=url, secret_encrypted=seal(receiver.DEMO_WEBHOOK_SECRET)
        )
        return recipient

    def _retention_rules(self) -> None:
        for name, defaults in DEMO_RETENTION_RULES:
            RetentionRule.objects.get_or_create(name=name, defaults=defaults)
