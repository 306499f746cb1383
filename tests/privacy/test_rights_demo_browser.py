"""Issue 41's rights as `make run`'s demo shows them, in Chromium on a 390-pixel phone: the
portal's demo travellers (FF-100231 in English, FF-100232 in Traditional Chinese) see the fact
whose use they stopped, the page that stops another, their open restriction request, "An
earlier version was redacted" and the restriction in their history, and the package's page;
the privacy admin sees the restricted fact on the traveller page, the redacted version and
the Redact control in a fact's history, and the restriction request. Each page: its key
sentence, nothing sideways, axe, a screenshot."""

from __future__ import annotations

import pytest

from memoryadmin.privacy.models import PrivacyRequest, RequestKind
from memoryadmin.staff.demo.data import RESTRICTED, WINDOW_QUOTE, WINDOW_SEAT
from tests.support.browser import PHONE, click, page_check, staff_login
from tests.support.demo import seed_demo
from tests.support.package import members

from ..portal.test_browser_demo import WORDS as DEMO_WORDS
from ..portal.test_browser_demo import check, enter

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "en": {
        "restricted_value": "Usually travels with spouse",
        "restricted_topic": "Who you travel with",
        "checking": "We are checking this. The assistant is not using it.",
        "stop": "Stop using this while you check it",
        "explain": "the assistant can stop using it while our team checks it",
        "requests": "Your requests and receipts",
        "your_data": "See your data as a page you can read and print",
        "redacted": "An earlier version was redacted on",
        "asked": "you asked us to stop using it while we check it",
    },
    "zh-hant": {
        "restricted_value": "通常和先生一起旅行",
        "restricted_topic": "同行旅伴",
        "checking": "我們正在確認這一筆。AI 客服目前不會使用。",
        "stop": "先暫停使用，等你們確認",
        "explain": "",
        "requests": "您的申請與確認單",
        "your_data": "以網頁查看您的資料，也可以列印",
        "redacted": "較早的一個版本已於",
        "asked": "您要求我們在確認期間先暫停使用",
    },
}


def _narrow(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page scrolls sideways ({width}px)"


@pytest.mark.parametrize("lang", ["en", "zh-hant"])
def test_the_demo_traveller_sees_the_restricted_fact_and_the_redacted_version(
    new_page, live_server, lang, settings
):
    words, demo = WORDS[lang], DEMO_WORDS[lang]
    subject = demo["subject"]
    seed_demo(settings)
    page = enter(new_page, live_server, subject, demo)

    # the fact list: the restricted fact says so, the others do not
    restricted = page.locator("li.card").filter(has_text=words["restricted_value"])
    assert words["checking"] in restricted.inner_text()
    assert page.locator("li.card").filter(has_text=words["checking"]).count() == 1
    check(page, f"rights-demo-facts-{lang}")

    # the page that stops the use of another fact (not confirmed here)
    seat = page.locator("li.card").filter(has_text=demo["quote"])
    click(seat.get_by_role("link", name=words["stop"]))
    assert page.get_by_role("heading", level=1).inner_text() == words["stop"]
    check(page, f"rights-demo-stop-{lang}")

    # your requests: the restriction, open, first, naming its fact
    page.goto(f"{live_server.url}/portal/")
    click(page.get_by_role("link", name=words["requests"]))
    first = page.locator("ul.requests > li").first
    assert words["checking"] in first.inner_text()
    assert first.locator("[data-topic]").inner_text() == words["restricted_topic"]
    check(page, f"rights-demo-requests-{lang}")

    # your data: the redacted version and the restriction, in words, never the old value
    page.goto(f"{live_server.url}/portal/")
    click(page.get_by_role("link", name=words["your_data"]))
    main = page.locator("main").inner_text()
    assert words["redacted"] in main and words["asked"] in main
    assert WINDOW_SEAT[subject] not in main and WINDOW_QUOTE[subject] not in main
    check(page, f"rights-demo-your-data-{lang}")

    # the download's page, opened from the ZIP on the phone
    language = {"Accept-Language": demo["locale"]}  # as the browser sends it with the download
    package = page.request.get(f"{live_server.url}/portal/download", headers=language).body()
    index = new_page(viewport=PHONE, locale=demo["locale"])
    index.set_content(members(package)["index.html"].decode("utf-8"))
    body = index.locator("body").inner_text()
    assert words["redacted"] in body and words["asked"] in body
    assert WINDOW_SEAT[subject] not in body
    page_check(index, f"rights-demo-package-{lang}")
    _narrow(index)


def test_the_demo_privacy_admin_sees_the_restriction_and_the_redaction_on_a_phone(
    new_page, live_server, settings
):
    seed_demo(settings)
    page = new_page(viewport=PHONE)
    staff_login(page, live_server, "privacy", "privacy-demo-2026")
    for subject in ("FF-100231", "FF-100232"):
        key, note = RESTRICTED[subject]
        page.goto(f"{live_server.url}/staff/travellers/{subject}/")
        restricted = page.locator("[data-restricted]")
        assert f"Restricted by the traveller: {note}" in restricted.inner_text()
        page_check(page, f"rights-demo-staff-traveller-{subject}")
        _narrow(page)

    subject = "FF-100231"
    page.goto(f"{live_server.url}/staff/travellers/{subject}/facts/seat_preference/")
    assert "Version 1 redacted on" in page.locator("[data-redacted]").inner_text()
    assert WINDOW_SEAT[subject] not in page.locator("main").inner_text()
    page_check(page, "rights-demo-staff-seat-history")
    _narrow(page)

    # a fact with an earlier version still whole: the privacy admin is offered the control
    page.goto(f"{live_server.url}/staff/travellers/{subject}/facts/home_airport/")
    assert page.get_by_role("link", name="Redact this version").count() == 1
    page_check(page, "rights-demo-staff-redact-control")
    _narrow(page)

    request = PrivacyRequest.objects.get(subject_id=subject, kind=RequestKind.RESTRICTION)
    page.goto(f"{live_server.url}/staff/privacy/requests/{request.number}/")
    fact = page.locator("[data-evidence=restricted_fact]").inner_text()
    assert f"Restricted by the traveller: {RESTRICTED[subject][1]}" in fact
    page_check(page, "rights-demo-staff-restriction-request")
    _narrow(page)
