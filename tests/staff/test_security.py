"""Staff sign-in hardening: lock-out after failed logins (per account and per address), the
password rules, and the privacy admin's second factor before any staff page."""

from __future__ import annotations

import io

import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.shortcuts import resolve_url
from django.test import Client
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from memoryadmin.staff.roles import EDITOR, PRIVACY_ADMIN, VIEWER
from tests.factories import UserFactory
from tests.support.demo import seed_demo

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery"  # the factory's


def staff(username: str, role: str):
    user = UserFactory(username=username)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def post_login(client: Client, username: str, password: str, ip: str = "203.0.113.7"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=ip)


def reaches_the_dashboard(client: Client) -> bool:
    """Following redirects from /, does the client end on a staff page (not the code page)?"""
    response = client.get("/", follow=True)
    path = response.redirect_chain[-1][0] if response.redirect_chain else "/"
    return response.status_code == 200 and not path.startswith(("/login/", "/logout/"))


def current_code(device: TOTPDevice) -> str:
    device.refresh_from_db()
    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    return f"{totp.token():0{device.digits}d}"


# --- lock-out ------------------------------------------------------------------------------------


def test_an_account_is_locked_after_five_failures_whatever_the_address(settings):
    staff("ed", EDITOR)
    statuses = [
        post_login(Client(), "ed", "wrong-password", ip=f"198.51.100.{n}").status_code
        for n in range(5)
    ]
    assert statuses == [200, 200, 200, 200, 429]  # the fifth failure locks

    locked = post_login(Client(), "ed", PASSWORD, ip="198.51.100.99")

    assert locked.status_code == 429
    body = locked.content.decode()
    assert "Sign-in locked for now" in body and "15 minutes" in body
    assert "_auth_user_id" not in Client().session


def test_an_address_is_locked_after_five_failures_whatever_the_account():
    staff("vi", VIEWER)
    for n in range(5):
        post_login(Client(), f"guess-{n}", "wrong-password", ip="192.0.2.50")

    from_there = post_login(Client(), "vi", PASSWORD, ip="192.0.2.50")
    from_elsewhere = post_login(Client(), "vi", PASSWORD, ip="192.0.2.51")

    assert from_there.status_code == 429
    assert from_elsewhere.status_code == 302


def test_fewer_failures_than_the_limit_do_not_lock_and_a_success_resets_them():
    staff("ok", VIEWER)
    for _ in range(4):
        post_login(Client(), "ok", "wrong-password")
    assert post_login(Client(), "ok", PASSWORD).status_code == 302
    for _ in range(4):
        post_login(Client(), "ok", "wrong-password")

    assert post_login(Client(), "ok", PASSWORD).status_code == 302


def test_behind_trusted_proxies_the_forwarded_address_is_counted(settings, rf):
    from memoryadmin.staff.security import client_ip

    request = rf.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.20")
    settings.TRUSTED_PROXY_HOPS = 0
    assert client_ip(request) == "10.0.0.2"  # the header is not trusted by default
    settings.TRUSTED_PROXY_HOPS = 1
    assert client_ip(request) == "198.51.100.20"  # not the forgeable left-most entry


# --- password rules ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "password",
    ["short-pw-1", "aB3$efgh-ij", "password1234", "123456789012", "margaret-hamilton-1"],
    ids=["too-short", "eleven", "common", "numeric", "like-the-user"],
)
def test_weak_staff_passwords_are_refused(password):
    user = UserFactory.build(username="margaret-hamilton", email="margaret@example.test")

    with pytest.raises(ValidationError):
        validate_password(password, user)


def test_a_long_uncommon_password_is_accepted():
    user = UserFactory.build(username="margaret-hamilton")

    validate_password("orbit-tangerine-lattice-42", user)


# --- second factor -------------------------------------------------------------------------------


@pytest.fixture
def admin_with_device():
    user = staff("pat", PRIVACY_ADMIN)
    device = TOTPDevice.objects.create(user=user, name="app", confirmed=True)
    return user, device


def test_a_privacy_admin_reaches_no_staff_page_before_the_code(admin_with_device):
    client = Client()

    after_password = post_login(client, "pat", PASSWORD)
    home = client.get("/")
    other = client.get("/some/future/staff/page/")

    assert after_password.status_code == 302
    for response in (home, other):
        assert response.status_code == 302
        assert response["Location"].startswith("/login/verify/?next=")


def test_the_right_code_opens_the_staff_pages_and_a_wrong_one_does_not(admin_with_device):
    _, device = admin_with_device
    client = Client()
    post_login(client, "pat", PASSWORD)

    wrong = client.post("/login/verify/", {"code": "000000", "next": "/"})
    assert wrong.status_code == 400
    assert "That code is not right" in wrong.content.decode()
    assert not reaches_the_dashboard(client)

    device.throttle_reset()
    right = client.post("/login/verify/", {"code": current_code(device), "next": "/"})

    assert right.status_code == 302 and right["Location"] == "/"
    assert reaches_the_dashboard(client)


def test_a_code_is_good_once(admin_with_device):
    _, device = admin_with_device
    first, second = Client(), Client()
    post_login(first, "pat", PASSWORD)
    post_login(second, "pat", PASSWORD)
    code = current_code(device)

    assert first.post("/login/verify/", {"code": code}).status_code == 302
    assert second.post("/login/verify/", {"code": code}).status_code == 400


def test_a_privacy_admin_without_an_authenticator_is_told_how_to_get_one():
    staff("nodevice", PRIVACY_ADMIN)
    client = Client()
    post_login(client, "nodevice", PASSWORD)

    page = client.get("/login/verify/")

    assert page.status_code == 200
    assert "staff_totp nodevice" in page.content.decode()
    assert not reaches_the_dashboard(client)


@pytest.mark.parametrize("role", [VIEWER, EDITOR])
def test_viewers_and_editors_need_no_code(role):
    staff("someone", role)
    client = Client()

    response = post_login(client, "someone", PASSWORD)

    assert response.status_code == 302 and not response["Location"].startswith("/login/verify/")
    assert reaches_the_dashboard(client)


def test_the_code_page_only_sends_you_on_to_this_site(admin_with_device):
    _, device = admin_with_device
    client = Client()
    post_login(client, "pat", PASSWORD)

    response = client.post(
        "/login/verify/", {"code": current_code(device), "next": "https://evil.example/"}
    )

    assert response.status_code == 302
    assert response["Location"] == resolve_url(settings.LOGIN_REDIRECT_URL)


def test_staff_totp_sets_up_an_authenticator_once_and_resets_on_request():
    staff("newadmin", PRIVACY_ADMIN)
    out = io.StringIO()

    call_command("staff_totp", "newadmin", stdout=out)
    assert "otpauth://totp/" in out.getvalue()
    with pytest.raises(CommandError):
        call_command("staff_totp", "newadmin", stdout=io.StringIO())
    call_command("staff_totp", "newadmin", "--reset", stdout=io.StringIO())

    assert TOTPDevice.objects.filter(user__username="newadmin", confirmed=True).count() == 1


def test_seed_demo_gives_the_demo_privacy_admin_a_working_code(settings, capsys):
    seed_demo(settings)
    assert "make demo-code" in capsys.readouterr().out  # the Makefile target runs demo_totp_code
    settings.DEBUG = True
    out = io.StringIO()
    call_command("demo_totp_code", "privacy", stdout=out)
    client = Client()
    post_login(client, "privacy", "privacy-demo-2026")

    response = client.post("/login/verify/", {"code": out.getvalue().strip(), "next": "/"})

    assert response.status_code == 302
    assert reaches_the_dashboard(client)


def test_demo_totp_code_is_refused_without_debug(settings):
    settings.DEBUG = False

    with pytest.raises(CommandError, match="Development only"):
        call_command("demo_totp_code", "privacy")


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize("path", ["/oidc/authenticate/", "/oidc/callback/"])
def test_the_sso_routes_send_to_the_sign_in_page_without_an_identity_provider(
    client, settings, method, path
):
    """A hostile probe found `/oidc/authenticate/` answering 500 with no provider configured."""
    settings.OIDC_ISSUER = ""
    client.raise_request_exception = False
    response = getattr(client, method)(path)
    assert response.status_code == 302 and response["Location"] == "/login/"
