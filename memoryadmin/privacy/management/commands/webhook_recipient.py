"""`manage.py webhook_recipient add NAME URL [--event E ...] [--traveller-name-en TEXT]
[--traveller-name-zh-hant TEXT]`: register a recipient (with what travellers' receipts call it)
and print its signing secret once. `webhook_recipient list` shows the recipients (never a
secret)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memoryadmin.facts.actors import Actor
from memoryadmin.privacy.errors import RequestInvalid
from memoryadmin.privacy.recipients import ALL_EVENTS, webhook_recipient_add
from memoryadmin.privacy.selectors import recipients


class Command(BaseCommand):
    help = "Register a webhook recipient (prints its signing secret once) or list them."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="register a recipient")
        add.add_argument("name")
        add.add_argument("url")
        add.add_argument(
            "--event",
            action="append",
            choices=ALL_EVENTS,
            dest="events",
            help="an event to send (repeat; default: all)",
        )
        add.add_argument(
            "--traveller-name-en",
            default="",
            help="what a traveller's receipt calls it, e.g. 'Our frequent flyer programme'",
        )
        add.add_argument(
            "--traveller-name-zh-hant",
            default="",
            help="the same in Traditional Chinese, e.g. 我們的會員計畫",
        )
        sub.add_parser("list", help="list the recipients")

    def handle(self, *args, **options) -> None:
        if options["action"] == "list":
            for row in recipients():
                state = "failing" if row.failing else ("active" if row.active else "removed")
                self.stdout.write(f"{row.name}\t{row.url}\t{','.join(row.events)}\t{state}")
            return
        try:
            recipient, secret = webhook_recipient_add(
                name=options["name"],
                url=options["url"],
                events=options["events"],
                actor=Actor.system("manage.py webhook_recipient"),
                reason="added from the shell",
                traveller_name_en=options["traveller_name_en"],
                traveller_name_zh_hant=options["traveller_name_zh_hant"],
            )
        except RequestInvalid as exc:
            raise CommandError("; ".join(exc.fields.values()) or exc.message) from None
        self.stdout.write(f"Added {recipient.name} ({', '.join(recipient.events)}).")
        self.stdout.write("Signing secret (shown once; store it in the receiving system now):")
        self.stdout.write(secret)
