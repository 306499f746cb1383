"""The support dashboard in Debian's Chromium: the flows support staff use every day, with the
keyboard and on a phone, checked by axe-core, and screenshots for the README."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from memoryadmin.api.models import Scope
from memoryadmin.api.tokens import token_issue
from memoryadmin.facts import selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent
from tests.factories import FactFactory
from tests.staff.conftest import PASSWORD, make_staff
from tests.support.browser import (
    assert_no_serious_axe_violations,
    click,
    dialogs_of,
    screenshot,
    staff_login,
)

pytestmark = pytest.mark.browser

S = "FF-100234"
XSS = "<script>alert(1)</script><img src=x onerror=alert(2)>"


@pytest.fixture
def traveller():
    """A traveller as support finds them: a few facts, one held for review, one sensitive."""
    FactFactory(subject_id=S, key="seat_preference", value="Prefers seats near the front")
    FactFactory(
        subject_id=S,
        key="overnight_flight",
        value="Avoids overnight flights",
        category="constraint",
    )
    FactFactory(
        subject_id=S, key="travel_party", value="Usually travels with spouse", category="context"
    )
    FactFactory(
        subject_id=S,
        key="mobility_assistance",
        actor=Actor.agent("host"),
        value="Needs a wheelchair from check-in to the gate",
        category="constraint",
    )
    FactFactory(subject_id="FF-100235", key="home_airport", value="Flies out of Songshan (TSA)")
    return S


def _login(page, live_server, role: str):
    user = make_staff(f"{role}-user", role)
    staff_login(page, live_server, user, PASSWORD)
    return user


def _open_menu_action(page, key: str, action: str) -> None:
    row = page.locator(f"#fact-{key}")
    click(row.get_by_text("Actions"))
    click(row.get_by_role("link", name=action, exact=True))


@pytest.mark.parametrize("role", ["viewer", "editor", "privacy_admin"])
def test_each_role_logs_in_and_sees_what_it_may_do(page, live_server, traveller, role):
    _login(page, live_server, role)
    expect(page).to_have_url(f"{live_server.url}/staff/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Overview")
    page.goto(f"{live_server.url}/staff/travellers/{S}/")
    select_boxes = page.get_by_role("checkbox")  # the bulk selection is for editors
    if role == "viewer":
        expect(select_boxes).to_have_count(0)
        expect(page.get_by_text("Needs a wheelchair")).to_have_count(0)  # sensitive: masked
    else:
        expect(select_boxes).to_have_count(4)
    if role == "editor":
        screenshot(page, "traveller")


def test_an_account_without_a_role_is_refused(page, live_server):
    make_staff("nobody", None)
    staff_login(page, live_server, "nobody", PASSWORD)
    response = page.goto(f"{live_server.url}/staff/")
    assert response.status == 403


def test_search_a_traveller_by_words_and_open_them(page, live_server, traveller):
    _login(page, live_server, "viewer")
    page.get_by_label("Find a traveller").fill("songshan")
    click(page.get_by_role("button", name="Search"))
    rows = page.locator("table.grid tbody tr")
    expect(rows).to_have_count(1)
    screenshot(page, "travellers-search")
    click(page.get_by_role("link", name="FF-100235"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Traveller FF-100235")


def test_edit_a_fact_and_see_its_history_entry(page, live_server, traveller):
    _login(page, live_server, "editor")
    page.goto(f"{live_server.url}/staff/travellers/{S}/")
    _open_menu_action(page, "seat_preference", "Edit")
    page.get_by_label("Value").fill("Prefers a window seat")
    page.get_by_label("Reason").fill("Traveller called to correct it")
    click(page.get_by_role("button", name="Save"))
    expect(page.locator(".flash")).to_contain_text("Saved Seat preference")
    # the fact reads as its topic, the key beside it in small code; the origin names the editor
    row = page.locator("#fact-seat_preference")
    expect(row.get_by_role("link", name="Seat preference", exact=True)).to_be_visible()
    expect(row.locator("code.fact-key")).to_have_text("seat_preference")
    size = "e => parseFloat(getComputedStyle(e).fontSize)"
    link_size = row.get_by_role("link", name="Seat preference").evaluate(size)
    assert row.locator("code.fact-key").evaluate(size) < link_size  # small, beside the topic
    expect(row.locator("td[data-label=Origin]")).to_have_text(
        re.compile(r"^Edited by editor-user on \d{1,2} \w{3} \d{4}$")
    )
    screenshot(page, "traveller-topics")
    click(row.get_by_role("link", name="Seat preference", exact=True))
    expect(page.get_by_role("heading", level=1)).to_have_text("Seat preference seat_preference")
    latest = page.locator("table.history tbody tr").first
    expect(latest).to_contain_text("Updated")
    expect(latest).to_contain_text("editor-user")
    expect(latest).to_contain_text("Traveller called to correct it")
    expect(latest.locator("del")).to_have_text("Prefers seats near the front")
    expect(latest.locator("ins")).to_have_text("Prefers a window seat")
    screenshot(page, "fact-history")


def test_expire_a_fact_and_the_agent_api_no_longer_serves_it(page, live_server, traveller):
    _, secret = token_issue(name="agent-host", scopes=[Scope.MEMORY_READ.value])
    api = f"{live_server.url}/api/v1/subjects/{S}/facts"
    headers = {"Authorization": f"Bearer {secret}"}
    keys = [fact["key"] for fact in page.request.get(api, headers=headers).json()["facts"]]
    assert "overnight_flight" in keys
    _login(page, live_server, "editor")
    page.goto(f"{live_server.url}/staff/travellers/{S}/")
    _open_menu_action(page, "overnight_flight", "Expire now")
    page.get_by_label("Reason").fill("No longer true")
    click(page.get_by_role("button", name="Expire now"))
    expect(page.locator(".flash")).to_contain_text("Expired Overnight flights")
    expect(page.locator("#fact-overnight_flight")).to_contain_text("expired")
    keys = [fact["key"] for fact in page.request.get(api, headers=headers).json()["facts"]]
    assert "overnight_flight" not in keys and "seat_preference" in keys


def test_flag_sensitive_masks_it_for_a_viewer_and_reveal_is_an_access_event(
    new_page, live_server, traveller
):
    editor_page = new_page()
    _login(editor_page, live_server, "editor")
    editor_page.goto(f"{live_server.url}/staff/travellers/{S}/")
    _open_menu_action(editor_page, "travel_party", "Flag sensitive")
    editor_page.get_by_label("Reason").fill("Family details")
    click(editor_page.get_by_role("button", name="Flag sensitive"))
    expect(editor_page.locator("#fact-travel_party")).not_to_contain_text("spouse")

    viewer_page = new_page()
    _login(viewer_page, live_server, "viewer")
    viewer_page.goto(f"{live_server.url}/staff/travellers/{S}/")
    expect(viewer_page.locator("#fact-travel_party")).to_contain_text("••••••")
    expect(viewer_page.get_by_text("Usually travels with spouse")).to_have_count(0)

    _open_menu_action(editor_page, "travel_party", "Reveal value")
    expect(editor_page.get_by_role("heading", level=1)).to_contain_text("Reveal")
    screenshot(editor_page, "reveal")
    editor_page.get_by_label("Reason").fill("Booking a family seat block")
    click(editor_page.get_by_role("button", name="Reveal"))
    expect(editor_page.locator("#fact-travel_party")).to_contain_text("Usually travels with spouse")
    editor_page.goto(f"{live_server.url}/staff/travellers/{S}/timeline/")
    latest = editor_page.locator("table.history tbody tr").first
    expect(latest).to_contain_text("Sensitive value revealed")
    expect(latest).to_contain_text("Booking a family seat block")
    screenshot(editor_page, "timeline")
    # The viewer still sees it masked: a reveal is for the person who asked.
    viewer_page.reload()
    expect(viewer_page.get_by_text("Usually travels with spouse")).to_have_count(0)


def test_approve_and_reject_from_the_review_queue(page, live_server, traveller):
    FactFactory(
        subject_id="FF-100236",
        key="health_note",
        actor=Actor.agent("host"),
        value="Diabetic, carries insulin in cabin baggage",
    )
    _login(page, live_server, "editor")
    click(page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Review queue"))
    rows = page.locator("table.review tbody tr")
    expect(rows).to_have_count(2)
    screenshot(page, "review-queue")
    first = rows.nth(0)
    expect(first).to_contain_text("mobility_assistance")
    # Sensitive: masked until revealed (one reason), then the decision.
    first.get_by_placeholder("Why you need to see it").fill("Deciding on boarding help")
    click(first.get_by_role("button", name="Reveal"))
    first = page.locator("table.review tbody tr").nth(0)
    first.get_by_placeholder("Reason", exact=True).fill("Needed for boarding help")
    click(first.get_by_role("button", name="Approve"))
    expect(page.locator(".flash")).to_contain_text("Approved Mobility assistance")
    remaining = page.locator("table.review tbody tr")
    expect(remaining).to_have_count(1)
    remaining.get_by_placeholder("Why you need to see it").fill("Checking before rejecting")
    click(remaining.get_by_role("button", name="Reveal"))
    remaining.get_by_placeholder("Reason", exact=True).fill("Not needed for travel")
    click(remaining.get_by_role("button", name="Reject…"))
    expect(page.get_by_role("heading", level=1)).to_contain_text("Reject and delete")
    click(page.get_by_role("button", name="Reject and delete"))
    expect(page.locator(".flash")).to_contain_text("Rejected Health")
    expect(page.get_by_text("Nothing is waiting for review")).to_be_visible()
    assert selectors.subject_fact(S, "mobility_assistance").status == "active"
    assert selectors.subject_fact("FF-100236", "health_note") is None


def test_bulk_delete_after_a_confirmation(page, live_server, traveller):
    _login(page, live_server, "editor")
    page.goto(f"{live_server.url}/staff/travellers/{S}/")
    page.get_by_label("Select seat_preference").check()
    page.get_by_label("Select travel_party").check()
    page.get_by_label("Action", exact=True).select_option("delete")
    page.get_by_label("Reason", exact=True).fill("Traveller asked us to delete these")
    click(page.get_by_role("button", name="Apply…"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Delete 2 facts for good?")
    expect(page.get_by_text("their old values are erased from the history too")).to_be_visible()
    screenshot(page, "bulk-confirm")
    click(page.get_by_role("button", name="Delete 2 facts"))
    expect(page.locator(".flash")).to_contain_text("Delete: 2 facts.")
    expect(page.locator("#fact-seat_preference")).to_have_count(0)
    expect(page.locator("#fact-travel_party")).to_have_count(0)
    assert FactEvent.objects.filter(subject_id=S, action="deleted").count() == 2


def test_a_stale_edit_from_a_second_tab_is_refused_and_shown(page, live_server, traveller):
    _login(page, live_server, "editor")
    edit_url = f"{live_server.url}/staff/travellers/{S}/facts/seat_preference/edit/"
    page.goto(edit_url)
    second_tab = page.context.new_page()
    second_tab.goto(edit_url)
    second_tab.get_by_label("Value").fill("Prefers the bulkhead row")
    second_tab.get_by_label("Reason").fill("First call")
    click(second_tab.get_by_role("button", name="Save"))
    expect(second_tab.locator(".flash")).to_contain_text("Saved")

    page.get_by_label("Value").fill("Prefers an exit row")
    page.get_by_label("Reason").fill("Second call")
    click(page.get_by_role("button", name="Save"))
    expect(page.get_by_role("heading", level=1)).to_contain_text("was changed while you were")
    expect(page.get_by_role("region", name="Your version")).to_contain_text("Prefers an exit row")
    expect(page.get_by_role("region", name="Current version")).to_contain_text(
        "Prefers the bulkhead row"
    )
    screenshot(page, "edit-conflict")
    assert selectors.subject_fact(S, "seat_preference").value == "Prefers the bulkhead row"
    click(page.get_by_role("link", name="Keep the current version"))
    expect(page.locator("#fact-seat_preference")).to_contain_text("Prefers the bulkhead row")


def test_a_script_in_a_fact_value_shows_as_text_and_runs_nothing(page, live_server):
    FactFactory(subject_id="T-XSS", key="note", value=XSS)
    _login(page, live_server, "editor")
    for path in ("", "timeline/", "facts/note/", "facts/note/edit/"):
        page.goto(f"{live_server.url}/staff/travellers/T-XSS/{path}")
        expect(page.get_by_text(XSS).first).to_be_visible()
    page.goto(f"{live_server.url}/staff/review/")
    assert dialogs_of(page) == []
    assert page.evaluate("document.querySelectorAll('img[src=x]').length") == 0


def test_logging_out_ends_the_session(page, live_server, traveller):
    _login(page, live_server, "viewer")
    click(page.get_by_role("button", name="Log out"))
    expect(page).to_have_url(re.compile(r"/login/\?signed_out=1$"))
    expect(page.get_by_role("status")).to_contain_text("You are signed out")
    page.goto(f"{live_server.url}/staff/travellers/{S}/")
    expect(page).to_have_url(re.compile(r"/login/\?next="))


def test_a_phone_and_the_keyboard_alone_are_enough(phone_page, live_server, traveller):
    page = phone_page
    page.goto(f"{live_server.url}/login/")
    screenshot(page, "login-phone")
    _login(page, live_server, "editor")
    page.goto(f"{live_server.url}/staff/travellers/{S}/")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways ({width}px)"
    screenshot(page, "traveller-phone")
    # Keyboard only: tab to the first row's action menu, open it, follow "Edit".
    menu = page.locator("#fact-seat_preference summary")
    for _ in range(60):
        page.keyboard.press("Tab")
        if menu.evaluate("el => el === document.activeElement"):
            break
    else:
        pytest.fail("the action menu cannot be reached with Tab")
    page.keyboard.press("Enter")
    edit = page.locator("#fact-seat_preference").get_by_role("link", name="Edit", exact=True)
    for _ in range(10):
        page.keyboard.press("Tab")
        if edit.evaluate("el => el === document.activeElement"):
            break
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Edit")
    page.keyboard.press("Tab")  # skip link
    page.get_by_label("Value").focus()
    page.keyboard.type(" (front half)")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    page.keyboard.type("Keyboard check")
    page.keyboard.press("Enter")
    expect(page.locator(".flash")).to_contain_text("Saved Seat preference")


def test_every_staff_page_passes_axe(page, live_server, traveller):
    FactFactory(subject_id=S, key="sensitive_note", value="Diabetic")
    services.fact_flag_sensitive(subject_id=S, key="sensitive_note", actor=Actor.system("t"))
    base = f"{live_server.url}/staff"
    page.goto(f"{live_server.url}/login/")
    assert_no_serious_axe_violations(page)
    screenshot(page, "login")
    _login(page, live_server, "privacy_admin")
    pages = {
        "overview": "/",
        "travellers": "/travellers/",
        None: f"/travellers/{S}/",
        "timeline-all": f"/travellers/{S}/timeline/",
        "fact": f"/travellers/{S}/facts/seat_preference/",
        "edit": f"/travellers/{S}/facts/seat_preference/edit/",
        "expiry": f"/travellers/{S}/facts/seat_preference/expiry/",
        "add-fact": f"/travellers/{S}/add-fact/",
        "delete-confirm": f"/travellers/{S}/facts/seat_preference/delete/",
        "reveal-form": f"/travellers/{S}/facts/sensitive_note/reveal/",
        "review": "/review/",
    }
    for name, path in pages.items():
        page.goto(base + path)
        assert_no_serious_axe_violations(page)
        if name in ("overview", "edit", "delete-confirm", "expiry", "add-fact"):
            screenshot(page, name)
    # Pages reached by a POST: a form with errors, the bulk confirmation, a conflict.
    page.goto(f"{base}/travellers/{S}/facts/seat_preference/edit/")
    page.locator("main form").evaluate("form => { form.noValidate = true; }")  # server's check
    page.get_by_label("Reason").fill("")
    page.get_by_label("Value").fill("Prefers the front")
    click(page.get_by_role("button", name="Save"))
    expect(page.locator(".error-summary")).to_be_visible()
    assert_no_serious_axe_violations(page)
    screenshot(page, "form-error")
    page.goto(f"{base}/travellers/{S}/")
    page.get_by_label("Select seat_preference").check()
    page.get_by_label("Reason", exact=True).fill("axe")
    click(page.get_by_role("button", name="Apply…"))
    assert_no_serious_axe_violations(page)
    page.set_viewport_size({"width": 390, "height": 844})
    for path in ("/", f"/travellers/{S}/timeline/", "/review/"):
        page.goto(base + path)
        assert_no_serious_axe_violations(page)


def test_a_heavy_traveller_is_paged_sorted_and_bulk_edited_in_place(page, live_server):
    """A traveller with 120 facts: 50 rows a page, sortable, and a bulk change made on page 2
    of a sort comes back to page 2 of that sort."""
    heavy = "FF-HEAVY-1"
    topics = ["seat", "meal", "lounge", "airport", "baggage", "connection", "cabin", "routes"]
    services.fact_upsert(
        subject_id=heavy,
        facts=[
            services.FactDraft(
                f"{topics[n % len(topics)]}_{n:03d}",
                f"Note {n + 1} about {topics[n % len(topics)]} habits",
                ("preference", "constraint", "context")[n % 3],
            )
            for n in range(120)
        ],
        actor=Actor.extraction("turn-1"),
    )
    _login(page, live_server, "editor")
    page.goto(f"{live_server.url}/staff/travellers/{heavy}/")
    rows = page.locator("table.facts tbody tr")
    expect(rows).to_have_count(50)
    expect(page.locator(".pager")).to_contain_text("1–50 of 120")
    assert_no_serious_axe_violations(page)
    screenshot(page, "traveller-many-facts")

    click(page.get_by_role("link", name="key", exact=True))
    click(page.locator(".pager").get_by_role("link", name="Next ›"))
    expect(page).to_have_url(re.compile(r"\?sort=key&page=2$"))
    expect(page.locator(".pager")).to_contain_text("51–100 of 120")
    keys = [row.get_attribute("id")[5:] for row in rows.all()]
    assert keys == sorted(keys) and len(keys) == 50
    page.get_by_label(f"Select {keys[0]}", exact=True).check()
    page.get_by_label(f"Select {keys[1]}", exact=True).check()
    page.get_by_label("Action", exact=True).select_option("expire")
    page.get_by_label("Reason", exact=True).fill("Traveller says these are out of date")
    click(page.get_by_role("button", name="Apply…"))
    click(page.get_by_role("button", name="Expire 2 facts"))
    expect(page.locator(".flash")).to_contain_text("Expire now: 2 facts.")
    expect(page).to_have_url(re.compile(r"\?sort=key&page=2$"))
    expect(page.locator(f"#fact-{keys[0]}")).to_have_class(re.compile("is-expired"))
    _open_menu_action(page, keys[2], "Flag sensitive")
    page.get_by_label("Reason").fill("Health detail")
    click(page.get_by_role("button", name="Flag sensitive"))
    expect(page).to_have_url(re.compile(r"\?sort=key&page=2$"))
    expect(page.locator(f"#fact-{keys[2]}")).to_contain_text("sensitive")


# --- Memory quality (issue 33) -------------------------------------------------------------


@pytest.fixture
def learned_sample():
    """Five travellers' learned facts drawn into a sample; one of them sensitive."""
    from memoryadmin.quality.services import quality_sample_draw
    from tests.quality.conftest import learn

    learn("FF-QB-001", "seat_preference", "Prefers an aisle seat")
    learn("FF-QB-002", "meal_preference", "偏好素食", by="agent")
    learn("FF-QB-003", "travel_party", "Travels with two children", "context")
    learn("FF-QB-004", "connections", "No more than one connection", "constraint")
    learn("FF-QB-005", "mobility", "Uses a wheelchair at airports", "context")
    services.fact_flag_sensitive(subject_id="FF-QB-005", key="mobility", actor=Actor.system("t"))
    return quality_sample_draw(actor=Actor.system("test"))


def _mark(page, subject_id: str, mark: str, reason: str | None = None) -> None:
    row = page.locator("tr", has=page.get_by_role("link", name=subject_id))
    row.get_by_label(mark, exact=True).check()
    if reason:
        row.get_by_label(re.compile("is wrong")).select_option(label=reason)
    click(row.get_by_role("button", name=re.compile("Save the mark")))
    expect(page.locator(".flash")).to_contain_text("Marked.")


def test_review_the_quality_sample_sensitive_values_revealed_first(
    page, live_server, learned_sample
):
    _login(page, live_server, "editor")
    click(page.get_by_role("link", name="Memory quality"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Memory quality")
    click(page.get_by_role("link", name="Review this week’s sample"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Quality sample")
    expect(page.locator("table.quality-sample tbody tr")).to_have_count(5)
    sensitive = page.locator("tr", has=page.get_by_role("link", name="FF-QB-005"))
    expect(sensitive).to_contain_text("Reveal the value to mark it")
    expect(page.get_by_text("Uses a wheelchair")).to_have_count(0)
    assert_no_serious_axe_violations(page)
    screenshot(page, "quality-sample")

    _mark(page, "FF-QB-001", "Correct")
    _mark(page, "FF-QB-003", "Wrong", "One-off (this trip only)")
    row = page.locator("tr", has=page.get_by_role("link", name="FF-QB-003"))
    expect(row.locator(".mark-given")).to_contain_text("Wrong: One-off (this trip only)")
    # Wrong without a reason is refused, with words.
    other = page.locator("tr", has=page.get_by_role("link", name="FF-QB-004"))
    other.get_by_label("Wrong", exact=True).check()
    click(other.get_by_role("button", name=re.compile("Save the mark")))
    expect(page.locator(".flash")).to_contain_text("choose why it is wrong")

    sensitive = page.locator("tr", has=page.get_by_role("link", name="FF-QB-005"))
    sensitive.get_by_placeholder("Why you need to see it").fill("weekly quality review")
    click(sensitive.get_by_role("button", name=re.compile("^Reveal")))
    expect(page.get_by_text("Uses a wheelchair at airports")).to_be_visible()
    _mark(page, "FF-QB-005", "Wrong", "Should not be kept (sensitive)")
    assert_no_serious_axe_violations(page)
    screenshot(page, "quality-sample-marked")
    assert FactEvent.objects.filter(subject_id="FF-QB-005", action="quality_marked").count() == 1

    click(page.get_by_role("link", name="Memory quality").first)
    stat = page.locator('[data-stat="precision"]')
    expect(stat).to_contain_text("33%")
    expect(stat).to_contain_text("1 correct of 3 marked")
    expect(page.get_by_text("FF-QB-005")).to_have_count(0)  # the figures name no traveller


def test_the_quality_page_at_1280_pixels(page, live_server, learned_sample):
    from memoryadmin.quality.services import quality_mark_record

    reviewer = _login(page, live_server, "editor")
    for n, item in enumerate(learned_sample.items.select_related("fact").order_by("id")):
        if not item.fact.sensitive:
            wrong = n == 0
            quality_mark_record(
                actor=Actor.staff(reviewer),
                item=item,
                mark="wrong" if wrong else "correct",
                reason="inference" if wrong else "",
            )
    page.goto(f"{live_server.url}/staff/quality/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Memory quality")
    expect(page.locator('[data-stat="precision"]')).to_contain_text("75%")
    expect(page.locator('[data-stat="precision"]')).to_contain_text("30% to 95%")
    expect(page.get_by_role("table", name="By prompt version")).to_be_visible()
    expect(page.get_by_role("table", name="By language")).to_contain_text("Traditional Chinese")
    expect(page.get_by_text("The model's inference: 1")).to_be_visible()
    assert page.viewport_size["width"] == 1280
    assert_no_serious_axe_violations(page)
    screenshot(page, "quality")
