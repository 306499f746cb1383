"""Staff single sign-on against a real OpenID provider: roles follow its groups, privacy admins'
second factor follows `amr`, and a bad state, nonce or expiry is refused."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from memoryadmin.access.models import StaffAccess
from memoryadmin.staff.roles import role_of
from tests.sso.conftest import ISSUER, walk_to_callback

pytestmark = [pytest.mark.django_db, pytest.mark.integration]  # a real OpenID provider (node)

GROUPS = {
    "viewer": ["memory-viewers"],
    "editor": ["other-team", "memory-editors"],
    "privacy_admin": ["memory-viewers", "memory-privacy"],
}


def _user(login: str):
    return get_user_model().objects.get(username=f"{login}@airline.example")


def _signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.parametrize("role", list(GROUPS))
def test_sign_in_as_each_role(idp, sso_sign_in, role):
    idp.account("ann", GROUPS[role], amr=["pwd", "mfa"])
    client, response = sso_sign_in("ann")
    assert response.status_code == 302 and response["Location"] == "/staff/"
    user = _user("ann")
    assert role_of(user) == role and not user.has_usable_password()
    assert client.get("/staff/").status_code == 200  # MFA at the provider: no local code
    sign_in = StaffAccess.objects.get(what="sign_in")
    assert (sign_in.staff_username, sign_in.login_method) == ("ann@airline.example", "sso")


def test_a_role_change_at_the_provider_is_seen_at_the_next_sign_in(idp, sso_sign_in):
    idp.account("bob", ["memory-editors"])
    sso_sign_in("bob")
    assert role_of(_user("bob")) == "editor"
    idp.account("bob", ["memory-viewers"])
    client, _ = sso_sign_in("bob")
    assert role_of(_user("bob")) == "viewer"
    assert client.post("/staff/travellers/X/add-fact/", {}).status_code == 403


def test_a_removed_group_is_refused_and_ends_every_session(idp, sso_sign_in):
    idp.account("cy", ["memory-editors"])
    earlier, _ = sso_sign_in("cy")
    assert earlier.get("/staff/").status_code == 200
    idp.account("cy", ["some-other-group"])
    client, refused = sso_sign_in("cy")
    assert refused.status_code == 403
    assert b"not in any group that gives access" in refused.content
    assert not _signed_in(client)
    assert role_of(_user("cy")) is None
    assert earlier.get("/staff/").status_code == 403  # the other session is refused at once


def test_a_session_is_rechecked_at_the_provider_and_ends_when_the_group_goes(idp, settings):
    idp.account("dee", ["memory-editors"])
    client = Client()
    callback, browser = walk_to_callback(client, "dee")
    client.get(callback)
    idp.account("dee", [])
    session = client.session
    session["oidc_id_token_expiration"] = 0  # the re-check interval has passed
    session.save()
    recheck = client.get("/staff/travellers/")
    assert recheck.status_code == 302
    target = urlsplit(recheck["Location"])
    assert f"{target.scheme}://{target.netloc}" == ISSUER
    assert parse_qs(target.query)["prompt"] == ["none"]
    # The browser still has its provider session: the answer comes back without a form.
    answer = browser.get(recheck["Location"], allow_redirects=False, timeout=10)
    while not answer.headers["location"].startswith("http://testserver/"):
        answer = browser.get(
            answer.headers["location"]
            if "://" in answer.headers["location"]
            else ISSUER + answer.headers["location"],
            allow_redirects=False,
            timeout=10,
        )
    refused = client.get(answer.headers["location"].removeprefix("http://testserver"))
    assert refused.status_code == 403 and not _signed_in(client)


def test_a_privacy_admin_without_mfa_at_the_provider_passes_the_local_code(idp, sso_sign_in):
    idp.account("pat", ["memory-privacy"], amr=["pwd"])
    client, _ = sso_sign_in("pat")
    page = client.get("/staff/")
    assert page.status_code == 302 and page["Location"].startswith("/login/verify/")
    idp.account("pat", ["memory-privacy"], amr=["pwd", "otp"])
    client, _ = sso_sign_in("pat")
    assert client.get("/staff/").status_code == 200


def test_a_bad_state_is_refused(idp):
    idp.account("eve", ["memory-editors"])
    client = Client()
    callback, _ = walk_to_callback(client, "eve")
    forged = callback.replace("state=", "state=x")
    response = client.get(forged)
    assert response.status_code == 400 and b"Sign-in refused" in response.content
    assert not _signed_in(client)


@pytest.mark.parametrize(
    "tamper",
    [{"nonce": "not-the-nonce-we-sent"}, {"exp_offset": -600}],
    ids=["bad nonce", "expired token"],
)
def test_a_bad_nonce_or_an_expired_token_is_refused(idp, sso_sign_in, tamper):
    idp.account("fay", ["memory-editors"])
    idp.tamper(**tamper)
    client, response = sso_sign_in("fay")
    assert response.status_code == 400 and b"did not check out" in response.content
    assert not _signed_in(client)
    assert not get_user_model().objects.filter(username="fay@airline.example").exists()


def test_the_same_token_untampered_is_accepted(idp, sso_sign_in):
    """The tampering above is what makes those fail: the provider's own tokens pass."""
    idp.account("fay", ["memory-editors"])
    client, response = sso_sign_in("fay")
    assert response.status_code == 302 and _signed_in(client)


def test_password_sign_in_is_off_once_sso_is_configured_and_recorded_when_on(idp, editor, settings):
    editor.set_password("correct-horse-battery")
    editor.save()
    data = {"username": "eddie", "password": "correct-horse-battery"}
    page = Client().get("/login/")
    assert b"Sign in with the airline" in page.content and b'name="password"' not in page.content
    refused = Client().post("/login/", data)
    assert refused.status_code == 403 and b"Password sign-in is turned off" in refused.content
    settings.STAFF_PASSWORD_LOGIN = True
    assert Client(REMOTE_ADDR="127.0.0.9").post("/login/", data).status_code == 302
    row = StaffAccess.objects.get(what="sign_in")
    assert (row.staff_username, row.login_method) == ("eddie", "password")


def test_a_local_break_glass_name_cannot_be_taken_over_through_sso(idp, sso_sign_in, editor):
    editor.username = "gil@airline.example"
    editor.set_password("correct-horse-battery")
    editor.save()
    idp.account("gil", ["memory-privacy"], amr=["mfa"])
    client, response = sso_sign_in("gil")
    assert response.status_code == 403 and not _signed_in(client)
