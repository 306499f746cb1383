"""Issuing, checking and revoking service tokens, and the scope permission factory."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from memoryadmin.api.models import Scope, ServiceToken
from memoryadmin.api.permissions import HasScope, scope_required
from memoryadmin.api.tokens import (
    token_authenticate,
    token_cache_clear,
    token_issue,
    token_revoke,
)
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_issue_returns_a_working_secret_with_clean_scopes():
    user = UserFactory()
    token, secret = token_issue(
        name="  booking-agent  ",
        scopes=["memory:write", "memory:read", "memory:read"],
        created_by=user,
    )

    assert secret.startswith("mat_") and len(secret) > 40
    assert token.name == "booking-agent"
    assert token.scopes == ["memory:read", "memory:write"]
    assert token.created_by == user
    assert token_authenticate(secret) == token


def test_every_secret_is_different():
    secrets = {token_issue(name="host", scopes=["memory:read"])[1] for _ in range(5)}

    assert len(secrets) == 5


@pytest.mark.parametrize(
    ("name", "scopes", "field"),
    [
        ("host", ["memory:admin"], "scopes"),
        ("host", [], "scopes"),
        ("", ["memory:read"], "name"),
        ("\x00\u200b", ["memory:read"], "name"),
        ("x" * 101, ["memory:read"], "name"),
    ],
)
def test_issue_refuses_bad_input_and_creates_nothing(name, scopes, field):
    with pytest.raises(ValidationError) as caught:
        token_issue(name=name, scopes=scopes)

    assert field in caught.value.message_dict
    assert not ServiceToken.objects.exists()


@pytest.mark.parametrize(
    "secret",
    ["", "mat_wrong", "x" * 10_000, None, 42],
)
def test_authenticate_refuses_anything_that_is_not_an_issued_secret(secret):
    token_issue(name="host", scopes=["memory:read"])

    assert token_authenticate(secret) is None


def test_revoked_tokens_stop_working_and_keep_their_revocation_time():
    token, secret = token_issue(name="host", scopes=["memory:read"])

    token_revoke(token=token)
    first = token.revoked_at
    token_revoke(token=token)

    assert first is not None
    assert ServiceToken.objects.get(pk=token.pk).revoked_at == first
    assert token_authenticate(secret) is None


def test_last_used_is_written_at_most_once_a_minute():
    token, secret = token_issue(name="host", scopes=["memory:read"])
    assert token.last_used_at is None

    token_authenticate(secret)
    first = ServiceToken.objects.get(pk=token.pk).last_used_at
    token_authenticate(secret)
    second = ServiceToken.objects.get(pk=token.pk).last_used_at

    assert first is not None
    assert second == first

    old = timezone.now() - timedelta(minutes=2)
    ServiceToken.objects.filter(pk=token.pk).update(last_used_at=old)
    token_cache_clear()  # as when the process cache's few seconds have passed
    token_authenticate(secret)

    assert ServiceToken.objects.get(pk=token.pk).last_used_at > old + timedelta(minutes=1)


def test_scope_required_builds_a_permission_for_known_scopes_only():
    permission = scope_required(Scope.TURNS_WRITE.value)

    assert issubclass(permission, HasScope)
    assert permission.scopes == ("turns:write",)
    with pytest.raises(ValueError):
        scope_required("turns:delete")
    with pytest.raises(ValueError):
        scope_required()


def test_an_active_token_is_looked_up_once_then_served_from_the_process_cache(
    django_assert_num_queries,
):
    token, secret = token_issue(name="cached-host", scopes=["memory:read"])
    assert token_authenticate(secret).pk == token.pk  # looks it up, stamps last_used_at
    with django_assert_num_queries(0):
        assert token_authenticate(secret).pk == token.pk


def test_revoking_is_effective_at_once_here_and_within_the_cache_ttl_elsewhere(settings):
    import time

    settings.API_TOKEN_CACHE_SECONDS = 0.2
    token, secret = token_issue(name="revoked-host", scopes=["memory:read"])
    assert token_authenticate(secret) is not None
    token_revoke(token=token)  # this process: at once
    assert token_authenticate(secret) is None

    other, other_secret = token_issue(name="other-host", scopes=["memory:read"])
    assert token_authenticate(other_secret) is not None
    # Another process revokes it (the row changes, this process's cache does not hear of it).
    ServiceToken.objects.filter(pk=other.pk).update(revoked_at=timezone.now())
    time.sleep(0.25)
    assert token_authenticate(other_secret) is None
