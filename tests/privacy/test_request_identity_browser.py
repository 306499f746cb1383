"""A request a travel agent made, on a 390x844 phone in Chromium: the editor records it through
the form (identity checked by phone, the agent, the letter of authority seen), its page says
who made it and that the portal link is the traveller's only; the traveller's "Your requests",
in English and in Traditional Chinese, says "Made for you by …". Then one recorded "Not yet
verified": the page says why it cannot be worked. Axe on every page, a screenshot of each (the
staff desk is in English: its screenshots are the same in both runs)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from memoryadmin.privacy.models import PrivacyRequest
from memoryadmin.staff.roles import EDITOR
from tests.staff.conftest import PASSWORD, make_staff
from tests.support.browser import PHONE, click, page_check, staff_login

from ..portal.test_browser import enter, link

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "en": {
        "locale": "en-GB",
        "made_by": "Made for you by Jade Lin (your travel agent)",
    },
    "zh-hant": {
        "locale": "zh-TW",
        "made_by": "由 Jade Lin（您的旅行社）代您提出",
    },
}


def _record(page, subject: str, **fields: str) -> None:
    page.get_by_label("Traveller id").fill(subject)
    page.get_by_label("What they asked for").select_option("access")
    page.get_by_label("How it arrived").select_option("email")
    page.get_by_label("How the traveller's identity was verified").select_option(
        fields.pop("identity", "checked")
    )
    for label, value in fields.items():
        field = page.get_by_label(label, exact=True)
        if field.evaluate("el => el.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)
    click(page.get_by_role("button", name="Record the request"))


@pytest.mark.parametrize("lang", ["en", "zh-hant"])
def test_an_agent_made_request_on_a_phone_both_sides(new_page, live_server, lang):
    words = WORDS[lang]
    subject = f"FF-AGENT-{lang}"
    staff = new_page(viewport=PHONE)
    staff_login(staff, live_server, make_staff(f"eddie-{lang}", EDITOR), PASSWORD)
    staff.goto(f"{live_server.url}/staff/privacy/record/")
    page_check(staff, "privacy-record-agent-phone")
    _record(
        staff,
        subject,
        **{
            "What was checked": "called back on the booking's number",
            "Made on the traveller's behalf by": "Jade Lin",
            "Their relation": "travel_agent",
            "Evidence of their authority seen": "signed letter of authority",
        },
    )
    made = staff.locator("[data-agent]")
    expect(made).to_contain_text("Made on the traveller's behalf by Jade Lin (travel agent)")
    expect(made).to_contain_text("The portal link goes to the traveller only, never to Jade Lin")
    assert staff.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert "/portal/open/" not in staff.content()
    page_check(staff, "privacy-request-agent-phone")

    traveller = new_page(viewport=PHONE, locale=words["locale"])
    enter(traveller, link(live_server, subject))
    traveller.goto(f"{live_server.url}/portal/requests")
    expect(traveller.locator("[data-made-by]")).to_have_text(words["made_by"])
    assert traveller.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page_check(traveller, f"portal-requests-agent-{lang}")

    # a second one, not yet verified: linked to the first, and it says why it cannot be worked
    staff.goto(f"{live_server.url}/staff/privacy/record/")
    _record(staff, subject, identity="unverified")
    expect(staff.locator("[data-blocked=identity]")).to_contain_text(
        "Identity not verified: record how the traveller's identity was checked"
    )
    expect(staff.get_by_role("button", name="Complete with the evidence")).to_have_count(0)
    first = PrivacyRequest.objects.get(subject_id=subject, duplicate_of=None)
    expect(staff.locator("[data-duplicate-of]")).to_contain_text(f"A duplicate of {first.number}")
    assert staff.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page_check(staff, "privacy-request-unverified-duplicate-phone")

    # the list: one clock (the duplicate is due with its original), "Identity not verified"
    staff.goto(f"{live_server.url}/staff/privacy/?subject_id={subject}")
    expect(staff.locator("td [data-identity=unverified]")).to_have_count(1)
    expect(staff.locator("td [data-duplicate-of]")).to_have_text(f"(duplicate of {first.number})")
    # on a phone each request is a card of labelled lines, not a table wider than the screen
    assert staff.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    expect(staff.locator('td[data-label="Due"]').first).to_be_visible()
    page_check(staff, "privacy-list-agent-duplicate-phone")
