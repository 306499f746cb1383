"""Issue 33 in Chromium: the staff turn view replays what the agent had (1280 px), the memory as
of a date (1280 px), and the traveller's card on a phone (390 px, both languages) says what the
assistant had in that chat. axe passes on each; screenshots to artifacts/screenshots."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent
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

WORDS = {
    "en": {
        "locale": "en-GB",
        "had": "Window seat, row 30 or later",
        "now": "Aisle seat near the front",
        "earlier": "In that chat the assistant had an earlier version: “",
    },
    "zh-hant": {
        "locale": "zh-TW",
        "had": "靠窗座位，30 排以後",
        "now": "前排靠走道座位",
        "earlier": "那次對話時，AI 客服用的還是之前的內容：「",
    },
}


def a_corrected_turn(subject_id: str, words: dict[str, str]) -> None:
    """The agent had `had` in turn t-1; the traveller corrected it afterwards."""
    services.fact_upsert(
        subject_id=subject_id,
        actor=Actor.extraction("job 1"),
        facts=[FactDraft("seat_preference", words["had"]), FactDraft("meal", "Vegetarian")],
    )
    uses_record(
        subject_id=subject_id,
        uses=[
            TurnUse(
                "sess-R",
                "t-1",
                injected=[{"key": "seat_preference", "version": 1}, "meal"],
            )
        ],
    )
    FactEvent.objects.filter(subject_id=subject_id).update(
        created_at=timezone.now() - timedelta(days=3)
    )
    services.fact_upsert(
        subject_id=subject_id,
        actor=Actor.customer(subject_id),
        facts=[FactDraft("seat_preference", words["now"])],
    )


def test_staff_replay_a_turn_and_see_the_memory_as_of_a_date(page, live_server, editor):
    words = WORDS["en"]
    a_corrected_turn("T-REPLAY-B", words)
    staff_login(page, live_server, editor, "correct-horse-battery")
    page.goto(f"{live_server.url}/staff/travellers/T-REPLAY-B/turns/{session_tag('sess-R')}/t-1/")
    row = page.locator("tr").filter(has_text="seat_preference")
    assert words["had"] in row.locator('[data-label="What the agent had"]').inner_text()
    assert f"now: {words['now']}" in row.locator('[data-label="Since"]').inner_text()
    page_check(page, "replay-staff-turn")

    page.goto(f"{live_server.url}/staff/travellers/T-REPLAY-B/")
    moment = timezone.localtime(timezone.now() - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    page.locator("#as-of-at").fill(moment)
    click(page.get_by_role("button", name="Show"))
    assert "/as-of/?at=" in page.url
    body = page.locator("main").inner_text() if page.locator("main").count() else page.content()
    assert words["had"] in body and words["now"] not in body
    assert "2 facts, 2 in tier one" in body
    page_check(page, "replay-staff-as-of")


@pytest.mark.parametrize("lang", ["en", "zh-hant"])
def test_a_traveller_sees_what_the_assistant_had_in_that_chat(new_page, live_server, lang):
    words = WORDS[lang]
    subject = f"FF-REPLAY-{lang.upper()}"
    a_corrected_turn(subject, words)
    page = new_page(viewport=PHONE, locale=words["locale"])
    secret = portal_link_issue(subject_id=subject, issued_by="browser test").secret
    page.goto(f"{live_server.url}/portal/open/{secret}")
    click(page.locator("[data-portal-open]"))
    card = page.locator("li.card").filter(has_text=words["now"])
    assert f"{words['earlier']}{words['had']}" in card.inner_text()
    page_check(page, f"replay-portal-why-{lang}")
