"""manage.py create_service_token: the secret is on the last line, alone, and works."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memoryadmin.api.models import ServiceToken
from memoryadmin.api.tokens import token_authenticate
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _run(*args: str) -> list[str]:
    out = StringIO()
    call_command("create_service_token", *args, stdout=out)
    return out.getvalue().rstrip("\n").split("\n")


def test_prints_the_secret_alone_on_the_last_line():
    lines = _run("booking-agent", "--scope", "memory:read", "--scope", "memory:write")

    secret = lines[-1]
    token = token_authenticate(secret)
    assert token is not None
    assert secret == secret.strip() and " " not in secret
    assert token.name == "booking-agent"
    assert token.scopes == ["memory:read", "memory:write"]
    assert token.prefix in "\n".join(lines[:-1])
    assert secret not in "\n".join(lines[:-1])


def test_records_who_issued_it():
    user = UserFactory(username="privacy-admin")

    secret = _run("host", "--scope", "turns:write", "--created-by", "privacy-admin")[-1]

    assert token_authenticate(secret).created_by == user


@pytest.mark.parametrize(
    "args",
    [
        ("host", "--scope", "memory:admin"),
        ("host", "--scope", "memory:read", "--scope", "everything"),
        ("host",),
        ("", "--scope", "memory:read"),
        ("host", "--scope", "memory:read", "--created-by", "nobody"),
    ],
)
def test_bad_arguments_are_a_command_error_and_create_nothing(args):
    with pytest.raises(CommandError):
        _run(*args)

    assert not ServiceToken.objects.exists()
