"""In Chromium: an editor opens a traveller and their timeline; the privacy admin sees both reads
in the access record; the traveller sees in the portal, in English and Chinese, that support
looked at their memory that day."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone
from playwright.sync_api import expect

from memoryadmin.portal.services import portal_link_issue
from memoryadmin.staff.roles import EDITOR, PRIVACY_ADMIN
from tests.factories import FactFactory, UserFactory
from tests.support.browser import (
    PHONE,
    assert_no_serious_axe_violations,
    click,
    screenshot,
    staff_login,
)

pytestmark = pytest.mark.browser

S = "T-BROWSER-LOOK"


def _staff(username: str, role: str):
    user = UserFactory(username=username)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def test_an_editors_reads_reach_the_access_record_and_the_traveller(new_page, live_server):
    editor = _staff("eddie", EDITOR)
    _staff("priya", PRIVACY_ADMIN)
    FactFactory(subject_id=S, key="seat", value="Prefers aisle seats")

    page = staff_login(new_page(), live_server, editor, "correct-horse-battery")
    page.goto(f"{live_server.url}/staff/travellers/{S}/")
    expect(page.get_by_text("Prefers aisle seats")).to_be_visible()
    page.goto(f"{live_server.url}/staff/travellers/{S}/timeline/")
    expect(page.get_by_role("heading", level=1)).to_be_visible()

    admin = staff_login(new_page(), live_server, "priya", "correct-horse-battery")
    click(admin.get_by_role("link", name="Access record"))
    admin.get_by_label("Traveller id").fill(S)
    with admin.expect_navigation():
        click(admin.get_by_role("button", name="Filter"))
    rows = admin.locator("#access-rows tbody tr")
    texts = [rows.nth(index).inner_text() for index in range(rows.count())]
    assert len(texts) == 2, texts
    assert "timeline" in texts[0] and "eddie" in texts[0]
    assert "traveller page" in texts[1] and "eddie" in texts[1]
    screenshot(admin, "staff-access-record")
    assert_no_serious_axe_violations(admin)

    today = timezone.localdate()
    for lang, header, expected in (
        ("en", "en", "Support agents looked 2 times."),  # the traveller page and the timeline
        ("zh-hant", "zh-Hant", "客服人員查看了 2 次。"),
    ):
        phone = new_page(viewport=PHONE, extra_http_headers={"Accept-Language": header})
        secret = portal_link_issue(subject_id=S, issued_by="browser test").secret
        phone.goto(f"{live_server.url}/portal/open/{secret}")
        click(phone.locator("[data-portal-open]"))  # a GET only shows the button
        click(phone.locator("a[href='/portal/looked']"))
        items = phone.locator("#looked-days li")
        assert items.count() == 1
        text = items.first.inner_text()
        assert expected in text and "eddie" not in text
        assert str(today.year) in text
        screenshot(phone, f"access-portal-looked-{lang}")  # the README's is the demo's
        assert_no_serious_axe_violations(phone)
