"""manage.py create_service_token NAME --scope memory:read --scope memory:write

Prints the secret on the last line, alone, so scripts can take it with `tail -n 1`. The secret is
not stored and cannot be shown again."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryadmin.api.models import Scope
from memoryadmin.api.tokens import token_issue
from memoryadmin.facts.actors import Actor


class Command(BaseCommand):
    help = "Issue a service token for an agent host and print its secret (shown once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="What the token is for, e.g. the agent host's name.")
        parser.add_argument(
            "--scope",
            action="append",
            dest="scopes",
            default=[],
            metavar="SCOPE",
            help=f"Repeat for each scope: {', '.join(Scope.values)}.",
        )
        parser.add_argument(
            "--rate",
            default="",
            metavar="RATE",
            help="This token's request limit, e.g. 1200/min (default: API_THROTTLE_RATE).",
        )
        parser.add_argument(
            "--created-by",
            default=None,
            metavar="USERNAME",
            help="The staff user recorded as issuing the token.",
        )

    def handle(
        self,
        *args: Any,
        name: str,
        scopes: list[str],
        created_by: str | None,
        rate: str = "",
        **options: Any,
    ) -> None:
        user = None
        if created_by:
            user = get_user_model().objects.filter(username=created_by).first()
            if user is None:
                raise CommandError(f"No user named {created_by!r}.")
        try:
            token, secret = token_issue(
                name=name,
                scopes=scopes,
                created_by=user,
                throttle_rate=rate,
                actor=Actor.staff(user) if user else Actor.system("manage.py create_service_token"),
            )
        except ValidationError as exc:
            messages = [msg for msgs in exc.message_dict.values() for msg in msgs]
            raise CommandError(" ".join(messages)) from exc
        self.stdout.write(
            f"Created service token {token.name!r} (prefix {token.prefix}, "
            f"scopes: {', '.join(token.scopes)}; "
            f"rate: {token.throttle_rate or 'the default'})."
        )
        self.stdout.write("Store the secret below now; it is not shown again.")
        self.stdout.write(secret)
