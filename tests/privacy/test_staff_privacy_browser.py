"""The privacy staff pages in Chromium at 1280 pixels, as each staff role: a privacy request's
record is true (the count left and the erase step, completion refused, the erase reason on the
timeline, "nothing held" without a 404), the review queue masked until one reveal, and the
settings pages (memory off for everyone, the retention form's radios, the webhook secret, the
legal hold, the policy history, the delivery log). Every page passes axe and leaves a
screenshot."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from memoryadmin.access.models import StaffAccess
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import MemorySettings
from memoryadmin.privacy import clock
from memoryadmin.privacy.models import PrivacyRequest, RequestStatus
from memoryadmin.privacy.services import privacy_request_record
from memoryadmin.staff.roles import EDITOR, PRIVACY_ADMIN, VIEWER
from tests.factories import FactFactory
from tests.staff.conftest import PASSWORD, make_staff
from tests.support.browser import (
    assert_no_serious_axe_violations,
    assert_one_h1,
    click,
    dialogs_of,
    screenshot,
    staff_login,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROLES = {"viewer": VIEWER, "editor": EDITOR, "privacy_admin": PRIVACY_ADMIN}


def check(page, name: str) -> None:
    assert_one_h1(page)
    assert_no_serious_axe_violations(page)
    screenshot(page, name)
    assert dialogs_of(page) == []
    text = page.locator("body").inner_text()
    for label in ("privacy_admin", "traveller:FF-", "token:", "ConnectError", "Path: "):
        assert label not in text, (name, label)


def _request(subject_id: str, kind: str) -> PrivacyRequest:
    return privacy_request_record(
        subject_id=subject_id,
        kind=kind,
        channel="phone",
        received_on=clock.today(),
        actor=Actor.system("test"),
    )


@pytest.mark.parametrize("role", ["viewer", "editor", "privacy_admin"])
def test_an_erasure_request_with_memory_left(page, live_server, role):
    subject = f"FF-95{len(role):04d}"
    for n in range(12):
        FactFactory(subject_id=subject, key=f"topic_{n}", value=f"Something {n}")
    req = _request(subject, "erasure")
    staff_login(page, live_server, make_staff(f"{role[:5]}-e", ROLES[role]), PASSWORD)
    page.goto(f"{live_server.url}/staff/privacy/requests/{req.number}/")
    traveller = page.locator("dd").first
    expect(traveller).to_contain_text("12 facts in memory")
    expect(page.locator("[data-zone]")).to_have_count(1)
    received = page.locator("dt", has_text="Received").locator("xpath=..").locator("dd")
    expect(received).not_to_contain_text("ago")
    expect(page.get_by_role("button", name="Complete with the evidence")).to_have_count(0)
    erase = page.get_by_role("link", name=f"Erase {subject}'s memory (12 facts)…")
    if role == "viewer":
        expect(erase).to_have_count(0)
        check(page, "privacy-erasure-request-viewer")
        return
    check(page, f"privacy-erasure-request-{role}")
    click(erase)
    expect(page.get_by_role("heading", level=1)).to_have_text(
        f"Erase {subject}'s memory (12 facts) for request {req.number}"
    )
    click(page.get_by_role("button", name="Erase 12 facts"))  # no reason: one error
    expect(page.locator(".field-error")).to_have_count(1)
    expect(page.locator(".error-summary")).to_contain_text("Reason: Say why")
    check(page, f"privacy-erase-step-error-{role}")
    page.get_by_label("Reason").fill("The traveller phoned on Tuesday")
    click(page.get_by_role("button", name="Erase 12 facts"))
    expect(page.locator("[data-status]")).to_contain_text("Completed")
    timeline = page.get_by_role("table").last
    expect(timeline).to_contain_text("Memory erased")
    expect(timeline).to_contain_text("The traveller phoned on Tuesday")
    expect(page.locator('[data-evidence="rows_remaining"]')).to_contain_text("0 rows")
    check(page, f"privacy-erasure-completed-{role}")
    req.refresh_from_db()
    assert req.status == RequestStatus.COMPLETED and req.evidence["rows_remaining"] == 0


@pytest.mark.parametrize("role", ["viewer", "editor", "privacy_admin"])
def test_a_request_about_a_traveller_we_hold_nothing_about(page, live_server, role):
    req = _request(f"FF-NOBODY-{role[:5]}", "access")
    staff_login(page, live_server, make_staff(f"{role[:5]}-n", ROLES[role]), PASSWORD)
    page.goto(f"{live_server.url}/staff/privacy/requests/{req.number}/")
    expect(page.locator("[data-nothing-held]")).to_have_text("we hold no memory for this id")
    for href in {link.get_attribute("href") for link in page.locator("main a[href^='/']").all()}:
        response = page.request.get(f"{live_server.url}{href}")
        assert response.status == 200, href
    check(page, f"privacy-nothing-held-{role}")
    if role == "viewer":
        return
    click(page.get_by_role("button", name="Complete with the evidence"))
    expect(page.locator('[data-evidence="nothing_held"]')).to_contain_text("Nothing held")
    req.refresh_from_db()
    assert req.evidence == {"nothing_held": True}


def _eventually(check_fn, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not check_fn():
        assert time.monotonic() < deadline
        time.sleep(0.05)


@pytest.mark.parametrize("role", ["viewer", "editor", "privacy_admin"])
def test_the_review_queue_masks_until_one_reveal(page, live_server, role):
    FactFactory(
        subject_id="FF-950100",
        key="pregnancy_note",
        actor=Actor.agent("host"),
        value="Twenty weeks pregnant",
    )
    staff_login(page, live_server, make_staff(f"{role[:5]}-r", ROLES[role]), PASSWORD)
    page.goto(f"{live_server.url}/staff/review/")
    row = page.locator("table.review tbody tr").first
    expect(row).not_to_contain_text("Twenty weeks pregnant")
    time.sleep(0.3)
    assert not StaffAccess.objects.exclude(what="sign_in").exists()
    check(page, f"privacy-review-masked-{role}")
    if role == "viewer":
        expect(row.get_by_role("button", name="Reveal")).to_have_count(0)
        return
    expect(row.get_by_role("button", name="Approve")).to_have_count(0)
    row.get_by_placeholder("Why you need to see it").fill("Deciding on it")
    click(row.get_by_role("button", name="Reveal"))
    row = page.locator("table.review tbody tr").first
    expect(row).to_contain_text("Twenty weeks pregnant")
    _eventually(lambda: StaffAccess.objects.exclude(what="sign_in").count() == 1)
    check(page, f"privacy-review-revealed-{role}")
    row.get_by_placeholder("Reason", exact=True).fill("Needed for the seat")
    click(row.get_by_role("button", name="Approve"))
    expect(page.locator(".flash")).to_contain_text("Approved Pregnancy")


def test_the_settings_pages_as_a_privacy_admin(page, live_server):
    FactFactory(subject_id="FF-950200", key="seat", value="aisle")
    FactFactory(subject_id="FF-950201", key="seat", value="window")
    staff_login(page, live_server, make_staff("priya-s", PRIVACY_ADMIN), PASSWORD)

    page.goto(f"{live_server.url}/staff/settings/")
    switch = page.get_by_label("Memory is on for every traveller (untick to turn it off)")
    switch.uncheck()
    page.locator("#id_reason").fill("Incident 44: pause all memory")
    click(page.get_by_role("button", name="Save settings"))
    expect(page.locator("[data-affected]")).to_contain_text("This affects 2 travellers")
    check(page, "privacy-memory-off-confirm")
    assert not MemorySettings.objects.filter(memory_enabled=False).exists()  # not yet
    click(page.get_by_role("button", name="Turn memory off for everyone"))
    expect(
        page.get_by_label("Memory is off for every traveller (tick to turn it on)")
    ).to_be_visible()
    page.goto(f"{live_server.url}/staff/")
    expect(page.locator("[data-memory-off]")).to_contain_text("Memory is off for every traveller")
    check(page, "privacy-overview-memory-off")

    page.goto(f"{live_server.url}/staff/settings/retention/add/")
    for label in ("Delete after a number of days", "Keep until deleted"):
        radio = page.get_by_role("radio", name=label).bounding_box()
        words = page.locator("label.check", has_text=label).bounding_box()
        # beside its label: on the label's line, at its start
        assert words["y"] <= radio["y"] <= words["y"] + words["height"], label
        assert radio["x"] - words["x"] < 10 and radio["width"] < 40, label
    page.get_by_label("Name").fill("Too short")
    page.locator("#id_ttl_days").fill("0")
    page.locator("#id_reason").fill("test")
    click(page.get_by_role("button", name="Preview the change"))
    expect(page.locator(".field-error")).to_have_count(1)
    check(page, "privacy-rule-zero-days")

    page.goto(f"{live_server.url}/staff/settings/legal-hold/FF-950200/")
    expect(page.locator("main")).to_contain_text('"forget everything"')
    expect(page.get_by_role("link", name="Cancel")).to_be_visible()
    check(page, "privacy-legal-hold")

    page.goto(f"{live_server.url}/staff/privacy/webhooks/")
    page.get_by_label("System name").fill("Warehouse")
    page.get_by_label("HTTPS address").fill("https://warehouse.example.com/hooks")
    page.get_by_label("Reason for this change").fill("Art. 19")
    click(page.get_by_role("button", name=re.compile("Register")))
    secret = page.locator("#secret")
    assert secret.input_value().startswith("whsec_")
    expect(page.get_by_role("button", name="Copy")).to_be_visible()
    check(page, "privacy-webhook-secret")

    page.goto(f"{live_server.url}/staff/settings/history/?kind=settings")
    expect(page.locator("main table")).to_contain_text("Memory settings changed")
    expect(page.locator("main table")).not_to_contain_text("Webhook recipient changed")
    expect(page.locator("[data-zone]")).to_have_count(1)
    check(page, "privacy-policy-history-settings")


def test_the_other_changed_staff_pages_pass_axe(page, live_server):
    from memoryadmin.facts import services
    from memoryadmin.facts.services import RuleProposal

    services.retention_rule_save(
        proposal=RuleProposal(
            pk=None, name="Sensitive", category="", key_glob="", sensitive=True, ttl_days=30
        ),
        actor=Actor.system("t"),
        reason="privacy promise",
    )
    FactFactory(subject_id="FF-950300", key="seat", value="aisle", actor=Actor.agent("host"))
    FactFactory(subject_id="FF-950300", key="meal", value="vegan")
    staff_login(page, live_server, make_staff("priya-o", PRIVACY_ADMIN), PASSWORD)
    base = f"{live_server.url}/staff/travellers/FF-950300"
    page.goto(f"{base}/timeline/")
    expect(page.locator("[data-zone]")).to_have_count(1)
    check(page, "privacy-timeline")
    page.goto(f"{base}/facts/meal/flag/")
    expect(page.locator("[data-sooner]")).to_contain_text("it will now be deleted on")
    check(page, "privacy-flag-sooner")
    page.goto(f"{live_server.url}/staff/access/")
    expect(page.locator("[data-zone]")).to_have_count(1)
    check(page, "privacy-access-record")
    page.goto(f"{base}/")
    page.get_by_label("Select seat").check()
    page.get_by_label("Select meal").check()
    page.get_by_label("Action", exact=True).select_option("delete")
    page.get_by_label("Reason", exact=True).fill("Traveller asked")
    click(page.get_by_role("button", name="Apply…"))
    confirm = page.locator("table.confirm-facts")
    expect(confirm).to_contain_text("aisle")
    expect(confirm).to_contain_text("vegan")
    check(page, "privacy-bulk-confirm")
