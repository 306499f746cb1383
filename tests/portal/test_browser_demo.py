"""The portal as `make run`'s demo traveller finds it, in Chromium on a 390-pixel phone, in English
(FF-100231) and Traditional Chinese (FF-100232): every differentiator on the first visit (their
own words, a fact the assistant saved, use receipts), "Delete this", "Your requests and
receipts" with a receipt found again by its number and told to a system named in the
traveller's words, who has looked by kind of staff, the readable copy of the data (printable),
and, for a traveller with nothing remembered, no "forget everything". axe on every page; the
screenshots are the README's."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from memoryadmin.portal.services import portal_link_issue
from memoryadmin.privacy.models import PrivacyRequest, RequestKind
from tests.support.browser import (
    PHONE,
    assert_no_serious_axe_violations,
    assert_one_h1,
    click,
    dialogs_of,
    screenshot,
)
from tests.support.demo import seed_demo

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "en": {
        "subject": "FF-100231",
        "locale": "en-GB",
        "title": "Your travel memory",
        "topic": "Seat preference",
        "quote": "On long flights I always take the aisle",
        "why": "Why the assistant knows this",
        "said": "You said on",
        "used": "Used in 4 conversations",
        "saved": "Saved by the assistant during a chat on",
        "saved_value": "Usually travels with spouse",
        "delete": "Delete this",
        "requests": "Your requests and receipts",
        "kinds": [
            "Stop using one thing while it is checked",
            "A correction",
            "A copy of your data",
            "Forget everything",
        ],
        "checking": "We are checking this. The assistant is not using it.",
        "done": "Done",
        "find": "Find",
        "told": "Our frequent flyer programme: confirmed",
        "zone": "Taiwan time",
        "looked": "Who has looked at your memory",
        "support": "Support agents looked 2 times.",
        "privacy": "A privacy officer looked once.",
        "your_data": "See your data as a page you can read and print",
        "data_h1": "Your data",
        "forget": "Forget everything",
        "nothing": "there is nothing to forget",
        "none_yet": "You haven't asked us for anything yet.",
    },
    "zh-hant": {
        "subject": "FF-100232",
        "locale": "zh-TW",
        "title": "您的旅行記憶",
        "topic": "座位偏好",
        "quote": "長途的話我一定要坐走道",
        "why": "AI 客服為什麼知道這件事",
        "said": "您在",
        "used": "已在 4 次對話中使用",
        "saved": "的對話中記下",
        "saved_value": "通常和先生一起旅行",
        "delete": "刪除這一筆",
        "requests": "您的申請與確認單",
        "kinds": ["暫停使用一筆，等待確認", "更正資料", "索取資料副本", "刪除所有記憶"],
        "checking": "我們正在確認這一筆。AI 客服目前不會使用。",
        "done": "已完成",
        "find": "查詢",
        "told": "我們的會員計畫：已確認",
        "zone": "台灣時間",
        "looked": "誰查看過您的記憶",
        "support": "客服人員查看了 2 次。",
        "privacy": "隱私專員查看了 1 次。",
        "your_data": "以網頁查看您的資料，也可以列印",
        "data_h1": "您的資料",
        "forget": "刪除所有記憶",
        "nothing": "沒有需要刪除的內容",
        "none_yet": "您還沒有提出任何申請。",
    },
}
# Internal labels a traveller must never read, in either language.
INTERNAL = (
    "rectification",
    "erasure",
    "in_progress",
    "completed",
    "privacy_admin",
    "traveller:",
    "CRM",
    "sha256",
    "UTC",
    "Don't use this",
    "不要再使用這筆資料",
)


def check(page, name: str) -> None:
    """Every page: one h1, nothing sideways on the phone, no internal label, no serious axe
    finding, no script ran; then its screenshot."""
    assert_one_h1(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    main = page.locator("main").inner_text()
    for label in INTERNAL:
        assert label not in main, (name, label)
    assert_no_serious_axe_violations(page)
    screenshot(page, name)
    assert dialogs_of(page) == []


def enter(new_page, live_server, subject: str, words: dict):
    page = new_page(viewport=PHONE, locale=words["locale"])
    secret = portal_link_issue(subject_id=subject, issued_by="browser test").secret
    page.goto(f"{live_server.url}/portal/open/{secret}")
    assert page.title() == words["title"]  # the link page's title, once
    click(page.locator("[data-portal-open]"))
    return page


@pytest.mark.parametrize("lang", ["en", "zh-hant"])
def test_the_demo_traveller_sees_every_differentiator_on_a_phone(
    new_page, live_server, lang, settings
):
    words = WORDS[lang]
    seed_demo(settings)
    page = enter(new_page, live_server, words["subject"], words)

    # the overview: topics as labels, why the assistant knows each, how often it was used
    icon = page.locator('link[rel="icon"]').get_attribute("href")
    assert page.request.get(f"{live_server.url}{icon}").status == 200
    seat = page.locator("li.card").filter(has_text=words["quote"])
    assert seat.locator("h3").inner_text() == words["topic"]
    why = seat.locator(".why")
    expect(why).to_be_visible()
    assert words["why"] in why.inner_text() and words["said"] in why.inner_text()
    assert words["used"] in why.inner_text()
    saved = page.locator("li.card").filter(has_text=words["saved_value"])
    assert words["saved"] in saved.inner_text() and words["said"] not in saved.inner_text()
    expect(saved.locator(".why")).to_be_visible()  # used, though not in the traveller's words
    for card in page.locator("li.card").all():
        expect(card.get_by_role("link", name=words["delete"])).to_be_visible()
    assert "Nothing here" not in page.content() and "目前沒有內容" not in page.content()
    check(page, f"portal-why-used-{lang}")

    # Your requests and receipts: each with one number and its status in words
    click(page.get_by_role("link", name=words["requests"]))
    items = page.locator("ul.requests > li")
    assert items.locator("h2").all_inner_texts() == words["kinds"]
    # the fact whose use they stopped two days ago is still being checked
    assert items.locator(".status").all_inner_texts() == [words["checking"]] + [words["done"]] * 3
    erasure = PrivacyRequest.objects.get(subject_id=words["subject"], kind=RequestKind.ERASURE)
    receipt = erasure.evidence["receipt"]
    assert items.nth(3).locator(".reference").inner_text() == receipt
    assert erasure.number not in page.locator("main").inner_text()
    check(page, f"portal-requests-{lang}")

    # a receipt found again by its number, typed the way people type
    page.get_by_label(re.compile("reference number|編號")).fill(receipt.lower())
    click(page.get_by_role("button", name=words["find"]))
    assert page.url.endswith(f"/portal/receipts/{receipt}")
    assert page.locator(".receipt-number").inner_text() == receipt
    assert words["told"] in page.locator("#told").inner_text()
    assert words["zone"] in page.locator("[data-zone]").inner_text()  # named once, in the footer
    assert len(re.findall(r"\bP?R-[0-9A-Z]{4}-", page.locator("main").inner_text())) == 1
    check(page, f"portal-receipt-told-{lang}")

    # who has looked: which kind of staff, how many times, on which day
    page.goto(f"{live_server.url}/portal/")
    click(page.get_by_role("link", name=words["looked"]))
    day = page.locator("#looked-days > li").first.inner_text()
    assert words["support"] in day and words["privacy"] in day
    assert "viewer" not in page.content() and "privacy-demo" not in page.content()
    check(page, f"portal-looked-{lang}")

    # the readable copy: topics, local times, the traveller's language; printable
    page.goto(f"{live_server.url}/portal/")
    click(page.get_by_role("link", name=words["your_data"]))
    assert page.get_by_role("heading", level=1).inner_text() == words["data_h1"]
    main = page.locator("main").inner_text()
    assert words["topic"] in main
    assert words["zone"] in page.locator("[data-zone]").inner_text()
    assert "seat_preference" not in main and "overnight_flight" not in main
    check(page, f"portal-your-data-{lang}")
    page.emulate_media(media="print")
    expect(page.locator("header.masthead")).to_be_hidden()
    expect(page.locator("footer")).to_be_hidden()
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    page.emulate_media(media="screen")


@pytest.mark.parametrize("lang", ["en", "zh-hant"])
def test_nothing_remembered_offers_nothing_to_forget(new_page, live_server, lang):
    words = WORDS[lang]
    page = enter(new_page, live_server, f"FF-EMPTY-{lang.upper()}", words)
    assert page.get_by_role("link", name=words["forget"]).count() == 0
    assert page.locator("section.group h2[id^=group-]").count() == 0  # no empty groups
    check(page, f"portal-nothing-{lang}")
    page.goto(f"{live_server.url}/portal/forget")
    assert words["nothing"] in page.locator("main").inner_text()
    assert page.get_by_role("link", name=re.compile("^(Continue|繼續)$")).count() == 0
    check(page, f"portal-forget-nothing-{lang}")
    page.goto(f"{live_server.url}/portal/requests")
    empty = page.locator("#requests-none")
    assert empty.inner_text() == words["none_yet"]
    assert empty.evaluate("e => getComputedStyle(e).fontStyle") == "normal"  # upright
    check(page, f"portal-requests-none-{lang}")
