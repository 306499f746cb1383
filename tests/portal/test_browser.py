"""The portal in Debian's Chromium on a 390x844 phone, in English and in Traditional Chinese:
every flow a traveller has, axe on every page, and a screenshot of each page for the README."""

from __future__ import annotations

import json
import re
from datetime import datetime
from zoneinfo import ZoneInfo

import httpx
import pytest
from django.conf import settings
from playwright.sync_api import expect

from memoryadmin.api.models import Scope
from memoryadmin.api.tokens import token_issue
from memoryadmin.facts import selectors
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import EventAction, FactEvent, MemoryFact
from memoryadmin.portal.services import portal_link_issue
from tests.factories import FactFactory
from tests.support.browser import (
    PHONE,
    click,
    dialogs_of,
    page_check,
)
from tests.support.dbscan import occurrences
from tests.support.package import members

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

XSS = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
# Per language: the browser's Accept-Language, and what the traveller reads.
LANGUAGES = {
    "en": {
        "locale": "en-GB",
        "open": "Continue to your memory",
        "deleted_on": "a fact you deleted",
        "h1": "What our assistant remembers about you",
        "groups": ["Your preferences", "Your travel rules", "About you and your trips"],
        "change": "This is wrong",
        "dont": "Delete this",
        "delete": "Delete",
        "save": "Save",
        "saved": "Saved. The assistant will use your wording from now on.",
        "blocked": "can't keep card, account, ID or phone numbers",
        "deleted": "Deleted. The assistant no longer remembers it.",
        "review": "Waiting for review.",
        "learn": "Learn from my conversations",
        "use": "Let the assistant use what it remembers",
        "save_choices": "Save my choices",
        "paused": "Not in use.",
        "download": "Download my data",
        "forget": "Forget everything",
        "continue": "Continue",
        "tick": "I understand that this can't be undone.",
        "tick_error": "Tick the box to confirm",
        "receipt": "Your receipt number",
        "sign_out": "Sign out",
        "signed_out": "You're signed out",
        "used": "This link has already been used",
        "values": (
            "Prefers aisle seats on long flights",
            "Avoids overnight flights",
            "Usually travels with spouse",
        ),
        "new_value": "Prefers a window seat, near the front",
        "topic": "Seat preference",
        "corrected": r"Corrected by you on \d{1,2} [A-Z][a-z]+ \d{4}",  # "5 December 2026"
    },
    "zh-hant": {
        "locale": "zh-TW",
        "open": "查看我的記憶",
        "deleted_on": "您刪除了一筆記憶",
        "h1": "AI 客服記得您哪些事",
        "groups": ["您的偏好", "您的旅行限制", "關於您和您的旅程"],
        "change": "內容有誤",
        "dont": "刪除這一筆",
        "delete": "刪除",
        "save": "儲存",
        "saved": "已儲存。之後 AI 客服會使用您寫的內容。",
        "blocked": "這裡不能記錄卡號、帳號、證件號碼、電話號碼",
        "deleted": "已刪除。AI 客服不會再記得這件事。",
        "review": "等待審核。",
        "learn": "從我的對話中學習",
        "use": "讓 AI 客服使用記憶",
        "save_choices": "儲存設定",
        "paused": "暫停使用。",
        "download": "下載我的資料",
        "forget": "刪除所有記憶",
        "continue": "繼續",
        "tick": "我了解刪除後無法復原。",
        "tick_error": "請勾選方框",
        "receipt": "確認編號",
        "sign_out": "登出",
        "signed_out": "您已登出",
        "used": "這個連結已經用過了",
        "values": ("長途航班偏好靠走道座位", "不搭紅眼班機", "通常和先生一起旅行"),
        "new_value": "偏好靠窗、前排的座位",
        "topic": "座位偏好",
        "corrected": r"您於\d{4}年\d{1,2}月\d{1,2}日更正",
    },
}


def traveller(subject_id: str, words: dict) -> None:
    seat, overnight, party = words["values"]
    FactFactory(
        subject_id=subject_id,
        key="seat_preference",
        value=seat,
        actor=Actor.extraction("turn-1"),
        session_tag="0123456789ab",
    )
    FactFactory(
        subject_id=subject_id,
        key="overnight_flight",
        value=overnight,
        category="constraint",
        actor=Actor.extraction("turn-1"),
    )
    FactFactory(
        subject_id=subject_id,
        key="travel_party",
        value=party,
        category="context",
        actor=Actor.staff(_staff()),
    )
    FactFactory(
        subject_id=subject_id,
        key="health_note",
        value="Carries insulin, diabetic",
        category="context",
        actor=Actor.agent("airline-agent"),
    )  # held for review
    FactFactory(subject_id=subject_id, key="nickname", value=XSS, actor=Actor.customer(subject_id))


def _staff():
    from tests.factories import UserFactory

    return UserFactory(username="support-ana")


def link(live_server, subject_id: str) -> str:
    secret = portal_link_issue(subject_id=subject_id, issued_by="browser test").secret
    return f"{live_server.url}/portal/open/{secret}"


def enter(page, url: str) -> None:
    """What a traveller does with the link: open it (a GET that spends nothing), then press the
    one button."""
    page.goto(url)
    click(page.locator("[data-portal-open]"))


def card(page, value: str):
    return page.locator("li.card").filter(has_text=value)


def package_check(new_page, package: dict[str, bytes], name: str, value: str) -> None:
    """The package's index.html read on a phone as the traveller opens it from the ZIP: no
    script ran, nothing was fetched, nothing wider than the screen but the tables' own
    scrolling regions."""
    page = new_page(viewport=PHONE)
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    page.set_content(package["index.html"].decode("utf-8"))
    assert value in page.locator("body").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page_check(page, name)
    assert fetched == []


@pytest.mark.parametrize("lang", ["en", "zh-hant"])
def test_a_traveller_on_a_phone_sees_corrects_deletes_exports_pauses_and_forgets(
    new_page, live_server, lang
):
    words = LANGUAGES[lang]
    subject = f"FF-BROWSER-{lang.upper()}"
    traveller(subject, words)
    _, secret = token_issue(
        name="airline-agent", scopes=[Scope.MEMORY_READ.value, Scope.TURNS_WRITE.value]
    )
    api = httpx.Client(
        base_url=live_server.url, headers={"Authorization": f"Bearer {secret}"}, timeout=30
    )
    page = new_page(viewport=PHONE, locale=words["locale"])

    # open a link: a page with one button, then the secret leaves the address bar
    page.goto(link(live_server, subject))
    expect(page.get_by_role("button").filter(has_text=words["open"])).to_be_visible()
    page_check(page, f"portal-open-{lang}")
    click(page.get_by_role("button").filter(has_text=words["open"]))
    assert page.url == f"{live_server.url}/portal/"
    assert page.get_by_role("heading", level=1).inner_text() == words["h1"]
    assert page.locator("h2[id^=group-]").all_inner_texts() == words["groups"]
    for value in words["values"]:
        expect(card(page, value)).to_be_visible()
    expect(card(page, "Carries insulin").get_by_text(words["review"])).to_be_visible()
    assert card(page, "onerror").locator(".fact-value").inner_text() == XSS  # text, not HTML
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]  # no sideways
    page_check(page, f"portal-home-{lang}")

    # correct one: a blocked value first (the message does not repeat it), then a good one
    click(card(page, words["values"][0]).get_by_role("link", name=words["change"]))
    page.locator("textarea").fill("call me on +886 912 345 678")
    click(page.get_by_role("button", name=words["save"], exact=True))
    summary = page.locator(".error-summary")
    assert words["blocked"] in summary.inner_text() and "912" not in summary.inner_text()
    page_check(page, f"portal-change-error-{lang}")
    page.locator("textarea").fill(words["new_value"])
    click(page.get_by_role("button", name=words["save"], exact=True))
    assert words["saved"] in page.locator(".notice").inner_text()
    expect(card(page, words["new_value"])).to_be_visible()
    # the card reads as its topic, never its key, and says the traveller wrote these words
    corrected = card(page, words["new_value"])
    expect(corrected.locator(".topic")).to_have_text(words["topic"])
    expect(corrected).to_contain_text(re.compile(words["corrected"]))
    assert "seat_preference" not in page.locator("main").inner_text()
    page_check(page, f"portal-corrected-{lang}")
    fact = MemoryFact.objects.get(subject_id=subject, key="seat_preference")
    assert (fact.value, fact.category) == (words["new_value"], "preference")

    # delete one, after a confirmation
    click(card(page, words["values"][2]).get_by_role("link", name=words["dont"]))
    assert page.locator("blockquote").inner_text() == words["values"][2]
    page_check(page, f"portal-delete-{lang}")
    click(page.get_by_role("button", name=words["delete"]))
    assert words["deleted"] in page.locator(".notice").inner_text()
    assert occurrences(words["values"][2]) == {}

    # download my data
    with page.expect_download() as download_info:
        click(page.get_by_role("link", name=words["download"]))
    download = download_info.value
    # the traveller's day: the airline's one zone in both languages (it may be tomorrow there)
    zone = ZoneInfo(settings.TIME_ZONE)
    day = datetime.now(zone).date().isoformat()
    assert download.suggested_filename == f"memory-{subject}-{day}.zip"
    package = members(download.path().read_bytes())
    exported = json.loads(package["memory.json"])
    assert words["new_value"] in [fact["value"] for fact in exported["facts"]]
    assert any(event["what"].startswith(words["deleted_on"]) for event in exported["history"])
    assert exported["switches"]["learn_from_conversations"]["label"] == words["learn"]
    assert exported["switches"]["use_memory"]["label"] == words["use"]
    package_check(new_page, package, f"portal-package-{lang}", words["new_value"])

    # pause learning: a posted turn is then skipped
    page.get_by_label(words["learn"]).uncheck()
    click(page.get_by_role("button", name=words["save_choices"]))
    turn = api.post(
        f"/api/v1/subjects/{subject}/turns",
        json={
            "session_id": "s-1",
            "turn_id": "t-1",
            "messages": [{"role": "user", "text": "I always fly business now"}],
        },
    )
    assert turn.status_code == 202 and turn.json()["status"] == "skipped"
    job = api.get(f"/api/v1/jobs/{turn.json()['job_id']}").json()
    assert "paused learning" in job["reason"]

    # pause use: the agent's reads return nothing, the facts are kept
    assert api.get(f"/api/v1/subjects/{subject}/facts").json()["facts"]
    page.get_by_label(words["use"]).uncheck()
    click(page.get_by_role("button", name=words["save_choices"]))
    assert api.get(f"/api/v1/subjects/{subject}/facts").json() == {"facts": []}
    assert api.get(f"/api/v1/subjects/{subject}/tier-one").json() == {"facts": []}
    expect(card(page, words["new_value"]).get_by_text(words["paused"])).to_be_visible()
    assert not page.get_by_label(words["use"]).is_checked()
    page_check(page, f"portal-home-paused-{lang}")

    # forget everything: check first, then confirm, then a receipt
    generation = selectors.purge_generation(subject)
    click(page.get_by_role("link", name=words["forget"]))
    page_check(page, f"portal-forget-{lang}")
    click(page.get_by_role("link", name=words["continue"]))
    click(page.get_by_role("button", name=words["forget"]))
    assert words["tick_error"] in page.locator(".error-summary").inner_text()
    assert MemoryFact.objects.filter(subject_id=subject).exists()
    page_check(page, f"portal-forget-confirm-{lang}")
    page.get_by_label(words["tick"]).check()
    click(page.get_by_role("button", name=words["forget"]))
    number = page.locator(".receipt-number").inner_text()
    assert re.fullmatch(r"R-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}", number)
    assert words["receipt"] in page.locator(".panel").inner_text()
    page_check(page, f"portal-receipt-{lang}")
    event = FactEvent.objects.get(subject_id=subject, action=EventAction.SUBJECT_CLEARED)
    assert event.after["receipt"] == number and event.after["facts_deleted"] == 4
    assert selectors.purge_generation(subject) == generation + 1
    for value in (*words["values"], words["new_value"], XSS):
        assert occurrences(value) == {}, value

    # sign out
    click(page.get_by_role("button", name=words["sign_out"]))
    assert page.get_by_role("heading", level=1).inner_text() == words["signed_out"]
    page_check(page, f"portal-signed-out-{lang}")
    api.close()


@pytest.mark.parametrize("lang", ["en", "zh-hant"])
def test_a_reused_link_is_refused_with_a_way_back(new_page, live_server, lang):
    words = LANGUAGES[lang]
    FactFactory(subject_id="FF-REUSE", key="seat_preference", value="Aisle")
    url = link(live_server, "FF-REUSE")
    first = new_page(viewport=PHONE, locale=words["locale"])
    enter(first, url)
    assert first.url.endswith("/portal/")
    first.goto(url)  # the same link again in the browser it signed in: straight back in
    assert first.url.endswith("/portal/") and "Aisle" in first.content()

    second = new_page(viewport=PHONE, locale=words["locale"])
    response = second.goto(url)

    assert response.status == 410
    assert second.get_by_role("heading", level=1).inner_text() == words["used"]
    assert "Aisle" not in second.content()
    page_check(second, f"portal-link-used-{lang}")


def test_the_language_switcher_works_without_javascript(new_page, live_server):
    FactFactory(subject_id="FF-SWITCH", key="seat_preference", value="Aisle")
    page = new_page(viewport=PHONE, locale="en-GB", java_script_enabled=False)
    enter(page, link(live_server, "FF-SWITCH"))
    assert page.get_by_role("heading", level=1).inner_text() == LANGUAGES["en"]["h1"]

    click(page.get_by_role("button", name="中文"))

    assert page.get_by_role("heading", level=1).inner_text() == LANGUAGES["zh-hant"]["h1"]
    assert page.locator("html").get_attribute("lang") == "zh-Hant-TW"
    click(page.get_by_role("button", name="English"))
    assert page.get_by_role("heading", level=1).inner_text() == LANGUAGES["en"]["h1"]


@pytest.mark.parametrize("lang", ["en", "zh-hant"])
def test_the_pages_without_a_session_are_clear_and_accessible(new_page, live_server, lang):
    """No session, a forged link, an unknown address: each says what happened and what to do."""
    words = LANGUAGES[lang]
    page = new_page(viewport=PHONE, locale=words["locale"])
    for path, status, name in (
        ("/portal/", 401, "portal-no-session"),
        ("/portal/open/not-a-real-link", 404, "portal-link-invalid"),
        ("/portal/no/such/page", 404, "portal-not-found"),
    ):
        response = page.goto(f"{live_server.url}{path}")
        assert response.status == status, path
        page_check(page, f"{name}-{lang}")


# Things a frequent flyer's assistant might have picked up over the years, per language.
MANY = {
    "en": (
        "Likes {} on flights",
        [
            "tea with milk",
            "the aisle on short hops",
            "a blanket",
            "quiet rows",
            "an early boarding call",
            "fruit for breakfast",
            "sparkling water",
            "a window over the wing",
        ],
    ),
    "zh-hant": (
        "搭機時喜歡{}",
        [
            "奶茶",
            "短程坐走道",
            "多一條毯子",
            "安靜的座位區",
            "提早登機",
            "早餐吃水果",
            "氣泡水",
            "機翼旁的窗邊座位",
        ],
    ),
}


@pytest.mark.parametrize("lang", ["en", "zh-hant"])
def test_a_long_memory_is_paged_on_a_phone(new_page, live_server, lang):
    """45 things remembered: three pages of at most 20, plain links (the portal has no script at
    all) with large targets, and a change made on page 2 comes back to page 2."""
    words = LANGUAGES[lang]
    pattern, things = MANY[lang]
    subject = f"FF-PAGES-{lang.upper()}"
    for n in range(45):
        category = "preference" if n < 30 else "constraint"
        FactFactory(
            subject_id=subject,
            key=f"habit_{n:02d}",
            category=category,
            value=f"{pattern.format(things[n % len(things)])} ({n + 1})",
            actor=Actor.extraction(f"turn-{n}"),
        )
    page = new_page(viewport=PHONE, locale=words["locale"])
    enter(page, link(live_server, subject))
    assert page.locator("li.card").count() == 20
    assert page.locator("script").count() == 0
    pager = page.get_by_role("navigation", name=re.compile("Pages|分頁"))
    for target in pager.locator("a").all():  # 44 px or more to tap
        box = target.bounding_box()
        assert box["height"] >= 44 and box["width"] >= 44, target.inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    standalone = page.locator("p.standalone a").all()
    assert len(standalone) >= 3  # the links under the list: your data, requests, who looked
    for target in standalone:  # a link on its own line is a target of its own
        assert target.bounding_box()["height"] >= 44, target.inner_text()

    click(pager.get_by_role("link", name=re.compile("^(Next page|下一頁)$")))
    page.wait_for_url("**/portal/?page=2")  # loaded, not the page before it (a race once)
    expect(page.locator("li.card")).to_have_count(20)
    assert pager.locator("[aria-current=page]").inner_text() == "2"
    page_check(page, f"portal-pages-{lang}")

    click(card(page, "(21)").get_by_role("link", name=words["change"]))
    page.locator("textarea").fill(words["new_value"])
    click(page.get_by_role("button", name=words["save"], exact=True))
    page.wait_for_url("**/portal/?page=2")  # the redirect after the save, loaded (not racing it)
    card(page, words["new_value"]).wait_for(state="visible")

    click(pager.get_by_role("link", name=re.compile("^(Page 3|第 3 頁)$")))
    page.wait_for_url("**/portal/?page=3")
    expect(page.locator("li.card")).to_have_count(5)
    expect(page.get_by_role("link", name=words["forget"])).to_be_visible()  # still on every page
    click(pager.get_by_role("link", name=re.compile("^(Previous page|上一頁)$")))
    page.wait_for_url("**/portal/?page=2")
    assert dialogs_of(page) == []
