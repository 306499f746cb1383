"""Getting in: single-use links, the portal session cookie, idle timeout, rate limit, and the
wall between portal sessions, staff logins and the API."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from memoryadmin.portal.auth import COOKIE_NAME
from memoryadmin.portal.models import PortalLink, PortalSession
from memoryadmin.portal.services import hash_secret, portal_link_issue
from tests.factories import FactFactory, UserFactory
from tests.support.dbscan import occurrences

from .conftest import A, open_url

pytestmark = pytest.mark.django_db


def test_a_link_opens_a_session_for_its_traveller_and_leaves_the_secret_behind(issue_link):
    FactFactory(subject_id=A, key="seat_preference", value="Prefers aisle seats")
    client = Client()

    response = client.post(open_url(issue_link(A)))

    assert response.status_code == 302 and response["Location"] == "/portal/"
    page = client.get("/portal/")
    assert page.status_code == 200
    assert "Prefers aisle seats" in page.content.decode()
    assert A not in page.content.decode()  # no traveller id on the page, in a URL or a form


def test_the_session_cookie_is_httponly_lax_scoped_to_the_portal_and_secure_outside_debug(
    issue_link, settings
):
    settings.PORTAL_COOKIE_SECURE = True
    cookie = Client().post(open_url(issue_link(A))).cookies[COOKIE_NAME]

    assert cookie["path"] == "/portal/"
    assert cookie["httponly"] is True
    assert cookie["secure"] is True
    assert cookie["samesite"] == "Lax"
    assert not cookie["max-age"]  # gone when the browser closes; the server ends it when idle


def test_cookies_are_secure_unless_debug():
    from django.conf import settings

    assert settings.PORTAL_COOKIE_SECURE is (not settings.DEBUG)


def test_only_hashes_are_stored(issue_link):
    secret = issue_link(A)
    client = Client()
    cookie = client.post(open_url(secret)).cookies[COOKIE_NAME].value

    assert PortalLink.objects.get().token_hash == hash_secret(secret)
    assert PortalSession.objects.get().key_hash == hash_secret(cookie)
    assert occurrences(secret) == {}
    assert occurrences(cookie) == {}


def test_a_link_works_once(issue_link):
    secret = issue_link(A)
    assert Client().post(open_url(secret)).status_code == 302

    replay = Client().get(open_url(secret), follow=True)

    assert replay.status_code == 410
    body = replay.content.decode()
    assert "This link has already been used" in body
    assert "Privacy and memory" in body  # how to get a new one
    assert COOKIE_NAME not in replay.client.cookies or not replay.client.cookies[COOKIE_NAME].value


def test_an_expired_link_is_refused_and_says_so(db):
    link = portal_link_issue(subject_id=A, issued_by="test", valid_for=timedelta(minutes=15))
    PortalLink.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    response = Client().get(open_url(link.secret), follow=True)

    assert response.status_code == 410
    assert "This link has expired" in response.content.decode()
    assert PortalSession.objects.count() == 0


def test_links_last_fifteen_minutes(db):
    before = timezone.now()
    link = portal_link_issue(subject_id=A, issued_by="test")
    after = timezone.now()
    assert before + timedelta(minutes=15) <= link.expires_at <= after + timedelta(minutes=15)


@pytest.mark.parametrize("secret", ["forged", "x" * 43, "a" * 500, "%00", "..%2F..%2Fstaff"])
def test_a_forged_link_is_refused(db, secret):
    response = Client().get(open_url(secret), follow=True)

    assert response.status_code == 404
    assert "This link doesn't work" in response.content.decode()
    assert PortalSession.objects.count() == 0


def test_opening_links_is_rate_limited_per_client_address(issue_link, settings):
    settings.PORTAL_REDEEM_RATE = "3/min"
    client = Client(REMOTE_ADDR="203.0.113.7")
    for _ in range(3):
        assert client.get(open_url("guess")).status_code == 302  # to the refusal page

    good = issue_link(A)
    blocked = client.post(open_url(good))

    assert blocked.status_code == 429
    assert blocked["Retry-After"] == "60"
    assert "Too many attempts" in blocked.content.decode()
    assert PortalLink.objects.get().used_at is None  # the good link was not spent by a refusal
    other = Client(REMOTE_ADDR="198.51.100.9")  # another address has its own count
    assert other.post(open_url(good)).status_code == 302


def test_a_session_ends_after_thirty_idle_minutes(signed_in, settings):
    assert settings.PORTAL_SESSION_IDLE_MINUTES == 30
    client = signed_in(A)
    PortalSession.objects.update(last_seen_at=timezone.now() - timedelta(minutes=29))
    assert client.get("/portal/").status_code == 200  # still alive, and the visit refreshed it

    PortalSession.objects.update(last_seen_at=timezone.now() - timedelta(minutes=30, seconds=1))
    response = client.get("/portal/")

    assert response.status_code == 401
    assert "Your session has ended" in response.content.decode()
    assert response.cookies[COOKIE_NAME].value == ""  # the dead cookie is removed
    assert PortalSession.objects.get().ended_at is not None


def test_signing_out_ends_the_session_on_the_server(signed_in):
    client = signed_in(A)
    cookie = client.cookies[COOKIE_NAME].value

    response = client.post("/portal/sign-out")

    # a redirect, so a refresh of the page after it re-sends nothing
    assert response.status_code == 302 and response["Location"] == "/portal/signed-out"
    page = client.get("/portal/signed-out")
    assert page.status_code == 200 and "You're signed out" in page.content.decode()
    assert client.get("/portal/signed-out").status_code == 200  # a refresh: still just a page
    replay = Client()
    replay.cookies[COOKIE_NAME] = cookie  # a copy of the cookie kept somewhere
    assert replay.get("/portal/").status_code == 401


def test_without_a_session_every_portal_page_asks_for_a_link(db):
    client = Client()
    for url in (
        "/portal/",
        "/portal/facts/seat_preference/change",
        "/portal/download",
        "/portal/forget",
        "/portal/forget/confirm",
        "/portal/receipts/R-AAAA-BBBB-CCCC",
    ):
        response = client.get(url)
        assert response.status_code == 401, url
        assert "Open your privacy link" in response.content.decode()


def test_a_staff_login_does_not_open_the_portal(db, client):
    user = UserFactory(username="editor-x", is_superuser=True)
    client.force_login(user)
    assert client.get("/staff/" if _has_staff_prefix() else "/").status_code in {200, 302}

    response = client.get("/portal/")

    assert response.status_code == 401


def _has_staff_prefix() -> bool:
    from django.urls import Resolver404, resolve

    try:
        resolve("/staff/")
    except Resolver404:
        return False
    return True


def test_a_portal_session_opens_neither_staff_pages_nor_the_api(signed_in):
    client = signed_in(A)
    # The browser would not even send the cookie outside /portal/; the test client does, which
    # proves the server itself does not honour it there.
    for url in ("/", "/staff/", "/staff/travellers/"):
        response = client.get(url)
        assert response.status_code in {302, 404}, url
        if response.status_code == 302:  # "/" only forwards to /staff/, which asks to log in
            assert "/login/" in response["Location"] or response["Location"] == "/staff/"
    api = client.get(f"/api/v1/subjects/{A}/facts")
    assert api.status_code == 401
    assert client.post(f"/api/v1/subjects/{A}/portal-links").status_code == 401


def test_the_signed_out_page_offers_no_sign_out_button(signed_in):
    client = signed_in(A)
    assert 'action="/portal/sign-out"' in client.get("/portal/").content.decode()
    page = client.post("/portal/sign-out", follow=True).content.decode()
    assert 'action="/portal/sign-out"' not in page
    # the switcher reloads this plain page, never the POST-only sign-out address
    assert '<input type="hidden" name="next" value="/portal/signed-out">' in page
