"""Redacting one past version in Chromium at 390 pixels: the privacy admin's way from the
fact's history to the confirmation and back, and what the traveller then reads in the portal,
in English and Traditional Chinese. Screenshots of each page; none scrolls sideways."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.services import FactDraft
from memoryadmin.portal.services import portal_link_issue
from tests.staff.conftest import PASSWORD, make_staff
from tests.support.browser import PHONE, assert_one_h1, click, screenshot, staff_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

T = "FF-REDACT-1"
OLD = "Window seat beside my colleague Jonas Quill"
NEW = "Window seat, rows 10 to 20"


def _narrow(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways ({width}px)"


def test_a_privacy_admin_redacts_a_version_on_a_phone_and_the_traveller_reads_it(
    phone_page, new_page, live_server
):
    services.fact_upsert(
        subject_id=T,
        actor=Actor.extraction("job 1"),
        facts=[FactDraft("seat_preference", OLD, evidence="next to Jonas Quill please")],
    )
    services.fact_upsert(
        subject_id=T, actor=Actor.customer(T), facts=[FactDraft("seat_preference", NEW)]
    )
    page = phone_page
    staff_login(page, live_server, make_staff("priya-phone", "privacy_admin"), PASSWORD)
    page.goto(f"{live_server.url}/staff/travellers/{T}/facts/seat_preference/")
    _narrow(page)
    click(page.get_by_role("link", name="Redact this version"))
    assert_one_h1(page)
    expect(page.get_by_role("heading", level=1)).to_contain_text("Redact version 1")
    _narrow(page)
    screenshot(page, "redact-confirm-phone")
    page.get_by_label("Why this version is redacted").fill("names a third party")
    click(page.get_by_role("button", name="Redact version 1"))
    expect(page.locator("[data-redacted]")).to_contain_text("Version 1 redacted on")
    expect(page.locator("main")).not_to_contain_text(OLD)
    _narrow(page)
    screenshot(page, "redact-history-phone")

    for language, locale, words in (
        ("en", "en-GB", "An earlier version was redacted on"),
        ("zh-hant", "zh-TW", "較早的一個版本已於"),
    ):
        traveller = new_page(viewport=PHONE, locale=locale)
        secret = portal_link_issue(subject_id=T, issued_by="browser test").secret
        traveller.goto(f"{live_server.url}/portal/open/{secret}")
        click(traveller.locator("[data-portal-open]"))
        traveller.goto(f"{live_server.url}/portal/your-data")
        expect(traveller.locator("main")).to_contain_text(words)
        expect(traveller.locator("main")).not_to_contain_text(OLD)
        _narrow(traveller)
        screenshot(traveller, f"redact-portal-history-{language}-phone")
