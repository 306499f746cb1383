"""Evidence and use in Chromium: staff see the quote, the counts, the last uses and the turn
view; a traveller on a phone, in English and in Traditional Chinese, sees why the assistant
knows each fact and how often it was used, and deletes it with "Delete this". Screenshots go to
artifacts/ (docs/screenshots/ under `make screenshots`)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from memoryadmin.facts import selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.services import FactDraft
from memoryadmin.facts.validation import session_tag
from memoryadmin.portal.services import portal_link_issue
from memoryadmin.usage.services import TurnUse, uses_record
from tests.support.browser import (
    PHONE,
    click,
    page_check,
    staff_login,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
XSS = '<img src=x onerror="alert(1)">'

WORDS = {
    "en": {
        "locale": "en-GB",
        "quote": "I always want an aisle seat",
        "value": "Prefers aisle seats",
        "other": "Vegetarian meals",
        "why": "Why the assistant knows this\n\nYou said on",
        "used": "Used in 2 conversations",
        "dont": "Delete this",
        "delete": "Delete",
        "deleted": "Deleted. The assistant no longer remembers it.",
    },
    "zh-hant": {
        "locale": "zh-TW",
        "quote": "我每次都要靠走道的位子",
        "value": "偏好靠走道座位",
        "other": "吃素",
        "why": "AI 客服為什麼知道這件事\n\n您在",
        "used": "已在 2 次對話中使用",
        "dont": "刪除這一筆",
        "delete": "刪除",
        "deleted": "已刪除。AI 客服不會再記得這件事。",
    },
}


def learned(subject_id: str, words: dict[str, str]) -> None:
    services.fact_upsert(
        subject_id=subject_id,
        actor=Actor.extraction("job 1"),
        session_tag="0123456789ab",
        facts=[
            FactDraft("seat_preference", words["value"], evidence=f"{words['quote']} {XSS}"),
            FactDraft("meal_preference", words["other"]),
        ],
    )
    uses_record(
        subject_id=subject_id,
        uses=[
            TurnUse("sess-1", "turn-1", injected=["seat_preference", "meal_preference"]),
            TurnUse("sess-2", "turn-2", recalled=["seat_preference"]),
        ],
    )


def test_staff_see_the_quote_the_uses_and_the_turn(page, live_server, editor):
    learned("T-EVIDENCE", WORDS["en"])
    staff_login(page, live_server, editor, "correct-horse-battery")
    page.goto(f"{live_server.url}/staff/travellers/T-EVIDENCE/")
    row = page.locator("#fact-seat_preference")
    assert row.locator('[data-label="Last used"]').inner_text() != "—"
    page_check(page, "usage-staff-traveller")
    click(row.get_by_role("link", name="Seat preference", exact=True))  # the topic heads the row
    assert page.locator("q.evidence").inner_text() == f"{WORDS['en']['quote']} {XSS}"
    assert "Used in 2 conversations (injected 1, recalled 1)" in page.content()
    page_check(page, "usage-staff-fact")
    click(page.get_by_role("link", name="turn-1"))
    assert page.url.endswith(f"/turns/{session_tag('sess-1')}/turn-1/")
    expect(page.get_by_text(WORDS["en"]["other"])).to_be_visible()
    used = page.locator("td[data-label=Fact]").filter(has_text="seat_preference").first
    expect(used.get_by_role("link", name="Seat preference", exact=True)).to_be_visible()
    expect(used.locator("code.fact-key")).to_have_text("seat_preference")
    page_check(page, "usage-staff-turn")


@pytest.mark.parametrize("lang", ["en", "zh-hant"])
def test_a_traveller_on_a_phone_sees_why_and_deletes_with_delete_this(new_page, live_server, lang):
    words = WORDS[lang]
    subject = f"FF-WHY-{lang.upper()}"
    learned(subject, words)
    page = new_page(viewport=PHONE, locale=words["locale"])
    secret = portal_link_issue(subject_id=subject, issued_by="browser test").secret
    page.goto(f"{live_server.url}/portal/open/{secret}")
    click(page.locator("[data-portal-open]"))  # a GET only shows the button
    card = page.locator("li.card").filter(has_text=words["value"])
    text = card.inner_text()
    assert words["why"] in text and words["quote"] in text and XSS in text  # shown as text
    assert words["used"] in text
    expect(card.locator(".why")).to_be_visible()  # the "why" box is shown, not folded away
    assert "Don't use this" not in text and "不要再使用這筆資料" not in text
    page_check(page, f"usage-portal-why-{lang}")
    click(card.get_by_role("link", name=words["dont"]))
    page_check(page, f"usage-portal-dont-use-{lang}")
    click(page.get_by_role("button", name=words["delete"]))
    assert words["deleted"] in page.locator(".notice").inner_text()
    assert selectors.subject_fact(subject, "seat_preference") is None
    assert page.locator("li.card").filter(has_text=words["value"]).count() == 0
