"""Opening a link: a GET only looks (mail scanners open every link in an e-mail), the one
button's POST spends it; a traveller still signed in who opens their used link again goes back
in; times on the portal are the traveller's."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent
from memoryadmin.portal.auth import COOKIE_NAME
from memoryadmin.portal.models import PortalLink, PortalSession
from tests.factories import FactFactory

from .conftest import A, B, open_url

pytestmark = pytest.mark.django_db


def test_a_link_opened_by_a_get_alone_is_still_good_for_its_traveller(issue_link):
    FactFactory(subject_id=A, key="seat_preference", value="Prefers aisle seats")
    secret = issue_link(A)
    scanner = Client(HTTP_USER_AGENT="MailScanner/1.0")
    for _ in range(3):  # a scanner, a link preview, a second scanner
        page = scanner.get(open_url(secret))
        assert page.status_code == 200
        assert "Continue to your memory" in page.content.decode()
        assert "Prefers aisle seats" not in page.content.decode()
        assert COOKIE_NAME not in page.cookies
    assert PortalLink.objects.get().used_at is None
    assert PortalSession.objects.count() == 0

    traveller = Client(enforce_csrf_checks=True)
    shown = traveller.get(open_url(secret))
    token = shown.cookies["csrftoken"].value
    spent = traveller.post(open_url(secret), {"csrfmiddlewaretoken": token})

    assert spent.status_code == 302 and spent["Location"] == "/portal/"
    assert "Prefers aisle seats" in traveller.get("/portal/").content.decode()
    assert PortalLink.objects.get().used_at is not None


def test_the_button_page_has_one_form_posting_back_to_the_link(issue_link):
    secret = issue_link(A)
    body = Client().get(open_url(secret)).content.decode()

    assert body.count("<form") == 2  # the language switcher, and the one button
    assert 'method="post"' in body and "data-portal-open" in body


def test_a_used_link_reopened_while_signed_in_goes_back_to_the_portal(issue_link):
    FactFactory(subject_id=A, key="seat_preference", value="Prefers aisle seats")
    secret = issue_link(A)
    client = Client()
    client.post(open_url(secret))

    again = client.get(open_url(secret))
    assert again.status_code == 302 and again["Location"] == "/portal/"
    assert client.post(open_url(secret))["Location"] == "/portal/"
    assert PortalSession.objects.count() == 1  # no new session either


def test_a_used_link_in_a_browser_signed_in_as_someone_else_is_refused(issue_link):
    secret = issue_link(A)
    Client().post(open_url(secret))
    other = Client()
    other.post(open_url(issue_link(B)))

    response = other.get(open_url(secret), follow=True)

    assert response.status_code == 410
    assert "This link has already been used" in response.content.decode()


def test_a_used_link_signed_out_says_it_was_used(issue_link):
    secret = issue_link(A)
    client = Client()
    client.post(open_url(secret))
    client.post("/portal/sign-out")

    response = client.get(open_url(secret), follow=True)

    assert response.status_code == 410


def _receipt_time(client: Client) -> str:
    services.subject_forget(subject_id=A, actor=Actor.customer(A), reason="test")
    number = FactEvent.objects.get(action="subject_cleared").receipt
    body = client.get(f"/portal/receipts/{number}").content.decode()
    return body


def test_times_are_in_the_airlines_one_zone_in_both_languages(issue_link, settings):
    settings.TIME_ZONE = "Asia/Taipei"
    FactFactory(subject_id=A, key="seat_preference", value="Aisle")
    chinese = Client(HTTP_ACCEPT_LANGUAGE="zh-hant")
    chinese.post(open_url(issue_link(A)))
    english = Client(HTTP_ACCEPT_LANGUAGE="en")
    english.post(open_url(issue_link(A)))

    assert "時間皆為台灣時間。" in _receipt_time(chinese)  # by the name readers use, not "CST"
    body = english.get("/portal/").content.decode()
    assert "Times are in Taiwan time." in body and "CST" not in body


def test_the_learned_date_on_a_card_is_in_the_airlines_zone(issue_link, settings):
    settings.TIME_ZONE = "Asia/Taipei"
    FactFactory(subject_id=A, key="seat_preference", value="Aisle")
    english = Client(HTTP_ACCEPT_LANGUAGE="en")
    english.post(open_url(issue_link(A)))
    chinese = Client(HTTP_ACCEPT_LANGUAGE="zh-hant")
    chinese.post(open_url(issue_link(A)))

    # the airline's one zone (TIME_ZONE) in both languages
    assert re.search(r'<time datetime="[0-9T:.-]+\+08:00"', english.get("/portal/").text)
    assert re.search(r'<time datetime="[0-9T:.-]+\+08:00"', chinese.get("/portal/").text)
