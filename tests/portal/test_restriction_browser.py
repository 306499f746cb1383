"""Stopping the use of one fact, on a 390x844 phone in Debian's Chromium, in English and in
Traditional Chinese: the card's link, the page that explains it, the card afterwards, "Your
requests", and using it again (the portal runs no script), axe on every page, a screenshot
of each."""

from __future__ import annotations

import pytest

from memoryadmin.facts.models import MemoryFact
from memoryadmin.privacy.models import PrivacyRequest, RequestKind
from tests.factories import FactFactory
from tests.support.browser import PHONE, click, page_check

from .test_browser import card, enter, link

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "en": {
        "locale": "en-GB",
        "stop": "Stop using this while you check it",
        "confirm": "Stop using this",
        "checking": "We are checking this.",
        "again": "Use this again",
        "requests": "Your requests and receipts",
    },
    "zh-hant": {
        "locale": "zh-TW",
        "stop": "先暫停使用，等你們確認",
        "confirm": "暫停使用",
        "checking": "我們正在確認這一筆。",
        "again": "恢復使用",
        "requests": "您的申請與確認單",
    },
}


@pytest.mark.parametrize("lang", ["en", "zh-hant"])
def test_a_traveller_stops_and_resumes_the_use_of_one_fact_on_a_phone(new_page, live_server, lang):
    words = WORDS[lang]
    subject = f"FF-RSB-{lang}"
    FactFactory(subject_id=subject, key="seat_preference", value="Middle seat, always")
    FactFactory(subject_id=subject, key="meal_preference", value="Vegetarian meals")
    page = new_page(viewport=PHONE, locale=words["locale"])
    enter(page, link(live_server, subject))
    doubted = card(page, "Middle seat, always")
    click(doubted.get_by_role("link", name=words["stop"]))
    page_check(page, f"restrict-{lang}-1-explain")
    page.locator("textarea[name=note]").fill("I always take the aisle <b>really</b>")
    click(page.get_by_role("button", name=words["confirm"], exact=True))
    page_check(page, f"restrict-{lang}-2-card")
    assert words["checking"] in card(page, "Middle seat, always").inner_text()
    assert words["checking"] not in card(page, "Vegetarian meals").inner_text()
    assert MemoryFact.objects.get(subject_id=subject, key="seat_preference").restricted_at
    page.goto(f"{live_server.url}/portal/requests")
    page_check(page, f"restrict-{lang}-3-requests")
    assert PrivacyRequest.objects.filter(subject_id=subject, kind=RequestKind.RESTRICTION).exists()
    page.goto(f"{live_server.url}/portal/")
    click(card(page, "Middle seat, always").get_by_role("link", name=words["again"]))
    page_check(page, f"restrict-{lang}-4-use-again")
    click(page.get_by_role("button", name=words["again"]))
    assert words["checking"] not in card(page, "Middle seat, always").inner_text()
    assert MemoryFact.objects.get(subject_id=subject, key="seat_preference").restricted_at is None
