"""`manage.py createstaffuser USERNAME --role editor`: a support account with one role.

The password comes from the prompt, or from STAFF_PASSWORD for scripts (never from argv, which
other users of the machine can read in the process list)."""

from __future__ import annotations

import getpass
import os

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from memoryadmin.staff.roles import ROLES


class Command(BaseCommand):
    help = "Create or update a support staff account with one role (viewer, editor, privacy_admin)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", choices=ROLES, required=True)
        parser.add_argument("--email", default="")

    def handle(self, *args, username: str, role: str, email: str, **options) -> None:
        password = os.environ.get("STAFF_PASSWORD") or self._prompt()
        User = get_user_model()
        user = User.objects.filter(username=username).first() or User(username=username)
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc
        with transaction.atomic():
            created = user.pk is None
            user.email = email or user.email
            user.is_staff = True  # lets them into Django's login; the group decides the rest
            user.is_active = True
            user.set_password(password)
            user.save()
            groups = [Group.objects.get_or_create(name=name)[0] for name in ROLES]
            user.groups.remove(*groups)
            user.groups.add(next(group for group in groups if group.name == role))
        verb = "Created" if created else "Updated"
        self.stdout.write(self.style.SUCCESS(f"{verb} {username} with role {role}."))

    def _prompt(self) -> str:
        first = getpass.getpass("Password: ")
        if first != getpass.getpass("Password (again): "):
            raise CommandError("The passwords do not match.")
        return first
