"""Issue 23 on the desk, in Chromium at 1280 and at 390 pixels: review that shows what it decides
on, deletions support can explain, the sensitive warning on a staff fact, the overview on a
phone, and one task done with the keyboard alone. axe on every page, screenshots for the docs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from memoryadmin.access.models import StaffAccess
from memoryadmin.facts import selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent
from memoryadmin.staff.templatetags.staff_time import day
from tests.factories import FactFactory
from tests.staff.conftest import PASSWORD, make_staff
from tests.support.browser import (
    DESKTOP,
    PHONE,
    assert_no_serious_axe_violations,
    click,
    screenshot,
    staff_login,
)
from tests.support.bulk import Row, load_facts
from tests.support.dbscan import occurrences

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

S = "FF-200301"
SIZES = {"desk": DESKTOP, "phone": PHONE}


def _editor(new_page, live_server, size: str):
    page = new_page(viewport=SIZES[size])
    staff_login(page, live_server, make_staff(f"editor-{size}", "editor"), PASSWORD)
    return page


def _fits(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"scrolls sideways ({width}px)"


def _eventually(check, seconds: float = 5.0) -> None:
    """The access record is written just after the response: wait for it, a little."""
    import time

    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "the access record did not arrive"
        time.sleep(0.05)


def _judged(page, name: str) -> None:
    """Every page a test reaches: no sideways scroll, nothing axe calls serious, a screenshot."""
    _fits(page)
    assert_no_serious_axe_violations(page)
    screenshot(page, name)


@pytest.mark.parametrize("size", ["desk", "phone"])
def test_a_sensitive_fact_is_decided_on_seen_and_reject_is_confirmed(new_page, live_server, size):
    FactFactory(
        subject_id=S,
        key="pregnancy_note",
        actor=Actor.agent("host"),
        value="Twenty weeks pregnant, asks for an aisle seat",
    )
    FactFactory(
        subject_id=S,
        key="health_note",
        actor=Actor.agent("host"),
        value="Diabetic, carries insulin in cabin baggage",
    )
    page = _editor(new_page, live_server, size)
    page.goto(f"{live_server.url}/staff/review/")
    rows = page.locator("table.review tbody tr")
    expect(rows).to_have_count(2)
    # Masked on load, nothing on the access record; one reveal with one reason, then decide.
    expect(rows.nth(0)).not_to_contain_text("Twenty weeks pregnant")
    expect(rows.nth(0)).to_contain_text("Reveal the value to decide")
    assert not StaffAccess.objects.exclude(what="sign_in").exists()
    _judged(page, f"review-queue-masked-{size}")
    rows.nth(0).get_by_placeholder("Why you need to see it").fill("Seat request confirmed by phone")
    click(rows.nth(0).get_by_role("button", name="Reveal"))
    rows = page.locator("table.review tbody tr")
    expect(rows.nth(0)).to_contain_text("Twenty weeks pregnant")
    expect(rows.nth(1)).not_to_contain_text("Diabetic")  # one value, not the page
    _eventually(lambda: StaffAccess.objects.exclude(what="sign_in").count() == 1)
    _judged(page, f"review-queue-sensitive-{size}")

    rows.nth(0).get_by_placeholder("Reason", exact=True).fill("Seat request confirmed by phone")
    click(rows.nth(0).get_by_role("button", name="Approve"))
    expect(page.locator(".flash")).to_contain_text("Approved Pregnancy")
    actions = list(
        FactEvent.objects.filter(subject_id=S, key="pregnancy_note")
        .order_by("id")
        .values_list("action", "reason")
    )
    assert actions[-2:] == [
        ("value_revealed", "Seat request confirmed by phone"),
        ("approved", "Seat request confirmed by phone"),
    ]

    remaining = page.locator("table.review tbody tr")
    remaining.get_by_placeholder("Why you need to see it").fill("Checking before rejecting")
    click(remaining.get_by_role("button", name="Reveal"))
    remaining.get_by_placeholder("Reason", exact=True).fill("Not needed for travel")
    click(remaining.get_by_role("button", name="Reject…"))
    expect(page.get_by_role("heading", level=1)).to_contain_text("Reject and delete")
    assert selectors.subject_fact(S, "health_note") is not None  # not yet
    _judged(page, f"review-reject-confirm-{size}")
    click(page.get_by_role("button", name="Reject and delete"))
    expect(page.locator(".flash")).to_contain_text("Rejected Health")
    assert selectors.subject_fact(S, "health_note") is None
    assert occurrences("carries insulin in cabin baggage") == {}


@pytest.mark.parametrize("size", ["desk", "phone"])
def test_updated_moves_when_a_fact_is_flagged(new_page, live_server, size):
    learned = timezone.now() - timedelta(days=10)
    load_facts(
        [
            Row(S, "seat_preference", "Aisle", updated_at=learned),
            Row(S, "meal_preference", "Vegetarian", updated_at=learned),
        ]
    )
    page = _editor(new_page, live_server, size)
    page.goto(f"{live_server.url}/staff/travellers/{S}/")
    updated = page.locator("#fact-meal_preference td[data-label=Updated] time")
    expect(updated).to_have_text(day(learned))

    click(page.locator("#fact-meal_preference summary"))
    click(page.locator("#fact-meal_preference").get_by_role("link", name="Flag sensitive"))
    page.get_by_label("Reason").fill("Religious diet: special category")
    click(page.get_by_role("button", name="Flag sensitive"))
    expect(page.locator(".flash")).to_contain_text("Flagged Meal preference")

    expect(updated).to_have_text("just now")
    assert day(timezone.now()) in updated.get_attribute("title")  # the exact time, on hover
    expect(page.locator("#fact-seat_preference td[data-label=Updated] time")).to_have_text(
        day(learned)
    )
    assert selectors.subject_fact(S, "meal_preference").updated_at == learned  # retention basis
    _judged(page, f"traveller-updated-{size}")


@pytest.mark.parametrize("size", ["desk", "phone"])
def test_forget_everything_leaves_what_support_may_say_of_each_fact(new_page, live_server, size):
    FactFactory(subject_id=S, key="meal_preference", value="Kosher meals please")
    services.fact_edit(
        subject_id=S,
        key="meal_preference",
        value="Halal meals please",
        actor=Actor.system("t"),
        reason="t",
        expected_version=1,
    )
    FactFactory(subject_id=S, key="seat_rule", value="Never a middle seat", category="constraint")
    receipt = services.subject_forget(
        subject_id=S, actor=Actor.customer(S), reason="forget everything in the privacy portal"
    )
    page = _editor(new_page, live_server, size)

    page.goto(f"{live_server.url}/staff/travellers/{S}/timeline/")
    expect(page.get_by_text("Deleted preference fact")).to_be_visible()
    expect(page.get_by_text("Deleted constraint fact")).to_be_visible()
    expect(page.locator("span.a-forgotten").first).to_have_text("Erased with everything else")
    for words in ("Kosher", "Halal", "middle seat", "meal_preference", "seat_rule"):
        assert words not in page.content()
    _judged(page, f"timeline-forgotten-{size}")

    click(page.get_by_role("link", name="deleted fact · preference").first)
    summary = page.locator("[data-deleted-fact]")
    expect(summary).to_contain_text("Preference")
    expect(summary).to_contain_text("“Forget everything”")
    expect(summary).to_contain_text(receipt.number)
    expect(summary).to_contain_text("The traveller, in the privacy portal")
    _judged(page, f"fact-forgotten-{size}")


@pytest.mark.parametrize("size", ["desk", "phone"])
def test_support_can_say_what_was_deleted_without_its_words(new_page, live_server, size):
    FactFactory(subject_id=S, key="meal_preference", value="Kosher meals please")
    services.fact_edit(
        subject_id=S,
        key="meal_preference",
        value="Halal meals please",
        actor=Actor.system("t"),
        reason="t",
        expected_version=1,
    )
    services.fact_delete(
        subject_id=S,
        key="meal_preference",
        actor=Actor.customer(S),
        reason="deleted by the traveller in the privacy portal",
    )
    FactFactory(subject_id=S, key="seat_preference", value="Aisle")
    page = _editor(new_page, live_server, size)

    page.goto(f"{live_server.url}/staff/travellers/{S}/timeline/")
    expect(page.get_by_text("Deleted preference fact")).to_be_visible()
    expect(page.get_by_text("The traveller, in the privacy portal").first).to_be_visible()
    assert "purge_generation" not in page.content() and f"traveller:{S}" not in page.content()
    _judged(page, f"timeline-deleted-{size}")

    click(page.get_by_role("link", name="deleted fact · preference").first)
    expect(page.get_by_role("heading", level=1)).to_have_text("Deleted fact")
    summary = page.locator("[data-deleted-fact]")
    expect(summary).to_contain_text("Preference")
    expect(summary).to_contain_text("1")  # changed once
    expect(summary).to_contain_text("The traveller, in the privacy portal")
    assert "Kosher" not in page.content() and "Halal" not in page.content()
    assert "meal_preference" not in page.content()
    _judged(page, f"fact-deleted-{size}")

    # the fact's old address, as a bookmark or an old ticket has it
    page.goto(f"{live_server.url}/staff/travellers/{S}/facts/meal_preference/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Deleted fact")


def test_a_staff_fact_that_looks_like_health_is_warned_about_then_masked(new_page, live_server):
    FactFactory(subject_id=S, key="seat_preference", value="Aisle")
    page = _editor(new_page, live_server, "desk")
    page.goto(f"{live_server.url}/staff/travellers/{S}/add-fact/")
    page.get_by_label("Key").fill("gate_assistance")
    page.get_by_label("Value").fill("Needs a wheelchair at the gate")
    page.get_by_label("Category").select_option("context")
    page.get_by_label("Reason").fill("Phone call")
    click(page.get_by_role("button", name="Add fact"))
    expect(page.locator("#sensitive-warning")).to_contain_text(
        "it will be masked and kept under the sensitive-facts rule"
    )
    assert_no_serious_axe_violations(page)
    screenshot(page, "fact-add-sensitive-warning")
    click(page.get_by_role("button", name="Add as a sensitive fact"))
    expect(page.locator(".flash")).to_contain_text("as a sensitive fact")
    fact = selectors.subject_fact(S, "gate_assistance")
    assert fact.sensitive and fact.status == "active"


def test_the_overview_on_a_phone_every_tile_a_link_and_a_readable_chart(new_page, live_server):
    FactFactory(subject_id=S, key="seat_preference", value="Aisle")
    page = _editor(new_page, live_server, "phone")
    page.goto(f"{live_server.url}/staff/")
    tiles = page.locator("ul.stats > li")
    for index in range(tiles.count()):
        assert tiles.nth(index).locator("a").count() == 1, tiles.nth(index).inner_text()
    expect(page.locator("svg.chart-narrow")).to_be_visible()
    expect(page.locator("svg.chart-wide")).to_be_hidden()
    label = page.locator("svg.chart-narrow text.tick").last.bounding_box()
    assert label["height"] >= 9, "chart labels shrink below legibility"
    _judged(page, "overview-phone")
    click(page.locator("ul.stats a", has_text="sensitive"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Travellers with sensitive facts")


def test_keyboard_only_find_a_traveller_and_leave_a_menu(new_page, live_server):
    """Search is focused on arrival, an exact id opens the traveller, an Actions menu opens with
    Enter and closes with Escape, giving focus back to its button."""
    FactFactory(subject_id=S, key="seat_preference", value="Aisle")
    FactFactory(subject_id="FF-200302", key="seat_preference", value="Window")
    page = _editor(new_page, live_server, "desk")
    page.goto(f"{live_server.url}/staff/travellers/")
    expect(page.locator("input[name=q]")).to_be_focused()
    page.keyboard.type(S)
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{live_server.url}/staff/travellers/{S}/")
    menu = page.locator("#fact-seat_preference details.menu")
    summary = menu.locator("summary")
    for _ in range(80):
        page.keyboard.press("Tab")
        if summary.evaluate("el => el === document.activeElement"):
            break
    else:
        pytest.fail("the Actions menu cannot be reached with Tab")
    page.keyboard.press("Enter")
    assert menu.evaluate("el => el.open")
    page.keyboard.press("Tab")  # into the menu: it stays open
    assert menu.evaluate("el => el.open")
    page.keyboard.press("Escape")
    assert not menu.evaluate("el => el.open")
    assert summary.evaluate("el => el === document.activeElement")
    page.keyboard.press("Enter")
    assert menu.evaluate("el => el.open")
    page.keyboard.press("Shift+Tab")  # focus leaves the menu: it closes
    assert not menu.evaluate("el => el.open")
    screenshot(page, "traveller-keyboard")
