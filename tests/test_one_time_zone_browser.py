"""One time zone on a 390-pixel phone: a staff page and a portal page each show the airline's
zone once, at their foot, and neither scrolls sideways."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from memoryadmin.facts.actors import Actor
from memoryadmin.portal.services import portal_link_issue
from memoryadmin.privacy import clock
from memoryadmin.privacy.services import privacy_request_record
from memoryadmin.staff.roles import EDITOR
from tests.staff.conftest import PASSWORD, make_staff
from tests.support.browser import screenshot, staff_login

pytestmark = pytest.mark.browser
T = "FF-ZONE-PHONE"


def _fits(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways ({width}px)"


def test_the_zone_is_named_once_on_a_phone(phone_page, live_server, settings):
    settings.TIME_ZONE = "Asia/Taipei"
    request = privacy_request_record(
        subject_id=T,
        kind="access",
        channel="letter",
        received_on=clock.today(),
        actor=Actor.system("test"),
    )
    page = phone_page
    staff_login(page, live_server, make_staff("zone-editor", EDITOR), PASSWORD)
    page.goto(f"{live_server.url}/staff/privacy/requests/{request.number}/")
    expect(page.locator("[data-zone]")).to_have_count(1)
    expect(page.locator("[data-zone]")).to_have_text(
        "Times are in Asia/Taipei (UTC+08:00), the airline’s time zone."
    )
    _fits(page)
    screenshot(page, "zone-staff-phone")

    link = portal_link_issue(subject_id=T, issued_by="test")
    page.goto(f"{live_server.url}/portal/open/{quote(link.secret)}")
    page.get_by_role("button", name="Continue").click()
    page.wait_for_load_state()
    page.goto(f"{live_server.url}/portal/requests")
    expect(page.locator("[data-zone]")).to_have_count(1)
    expect(page.locator("[data-zone]")).to_have_text("Times are in Taiwan time.")
    _fits(page)
    screenshot(page, "zone-portal-phone")
