"""The privacy admins' settings pages in Chromium: change a retention rule, read the preview,
confirm, and watch a real Celery worker's recompute finish on the page without a reload; an
invalid blocked pattern is refused with a message; viewers and editors get no settings page.
Every page passes axe and leaves a screenshot in docs/screenshots/."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta

import pytest
import redis
from django.contrib.auth.models import Group
from django.utils import timezone
from playwright.sync_api import expect

from memoryadmin.facts.models import MemoryFact, RetentionRule, RetentionRun, RunStatus
from memoryadmin.staff.roles import EDITOR, PRIVACY_ADMIN, VIEWER
from tests.extraction.worker import Worker, publishing_to
from tests.factories import UserFactory
from tests.support.browser import (
    PHONE,
    assert_no_serious_axe_violations,
    click,
    screenshot,
    staff_login,
)
from tests.support.bulk import Row, load_facts

pytestmark = pytest.mark.browser
PASSWORD = "correct-horse-battery"


def user_with(role: str, username: str):
    user = UserFactory(username=username)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture
def admin_page(page, live_server):
    staff_login(page, live_server, user_with(PRIVACY_ADMIN, "pat.privacy"), PASSWORD)
    return page


@pytest.fixture
def worker(live_server) -> Iterator[Worker]:
    """A real worker that recomputes in small, slow chunks so the progress can be watched."""
    url = os.environ["TEST_BROKER_URL"]
    redis.Redis.from_url(url).flushdb()
    running = Worker(
        broker_url=url,
        name="settings-worker",
        env={"RETENTION_SWEEP_CHUNK_SIZE": "40", "RETENTION_SWEEP_PAUSE_SECONDS": "0.4"},
    ).start()
    try:
        with publishing_to(url):
            yield running
    finally:
        running.stop()
        redis.Redis.from_url(url).flushdb()


def test_change_a_rule_preview_confirm_and_watch_the_recompute_finish(
    admin_page, live_server, worker
):
    page = admin_page
    now = timezone.now()
    load_facts(
        Row(
            f"T-{n:04d}",
            "travel_party",
            f"Travels with family {n}",
            category="context",
            updated_at=now - timedelta(days=n % 60),
            expires_at=now + timedelta(days=300),
        )
        for n in range(400)
    )
    RetentionRule.objects.create(name="Trip context", category="context", ttl_days=365)

    page.goto(f"{live_server.url}/staff/settings/retention/")
    assert_no_serious_axe_violations(page)
    click(page.get_by_role("link", name="Edit Trip context"))
    page.get_by_label("Days after the fact last changed").fill("30")
    page.get_by_label("Reason for this change").fill("DPIA-2026-07: trip context for 30 days")
    click(page.get_by_role("button", name="Preview the change"))

    page.get_by_role("heading", name="Check before you save").wait_for()
    expire_now = int(page.locator('[data-preview="expire_now"]').inner_text())
    shorten = int(page.locator('[data-preview="shorten"]').inner_text())
    # Ages 0-59 days (n % 60): the 190 facts 30 days old or more expire now, the rest shorten.
    assert (expire_now, shorten) == (190, 210)
    assert not RetentionRun.objects.exists()  # nothing happens before confirming
    screenshot(page, "settings-retention-preview")
    assert_no_serious_axe_violations(page)

    click(page.get_by_role("button", name="Confirm and apply"))
    page.get_by_text("Saved the rule").wait_for()
    status = page.get_by_role("status").filter(has_text="facts checked")
    assert "so far" in status.inner_text()  # the worker has only just begun
    screenshot(page, "settings-retention-progress")
    # The page's script polls the progress; no reload.
    status.filter(has_text="Finished: 400 of 400").wait_for(timeout=30_000)
    assert page.locator("progress").get_attribute("value") == "400"
    expect(page.get_by_role("heading", name="Last recomputation of expiry dates")).to_be_visible()
    screenshot(page, "settings-retention-finished")
    assert RetentionRun.objects.get().status == RunStatus.DONE
    # The worker then swept what the change expired.
    deadline = timezone.now() + timedelta(seconds=30)
    while MemoryFact.objects.count() != shorten and timezone.now() < deadline:
        page.wait_for_timeout(200)
    assert MemoryFact.objects.count() == shorten


def test_an_invalid_blocked_pattern_is_refused_with_a_message(admin_page, live_server):
    page = admin_page
    page.goto(f"{live_server.url}/staff/settings/")
    screenshot(page, "settings-memory")
    assert_no_serious_axe_violations(page)
    page.get_by_label("Extra blocked patterns").fill("loyalty\\s*\\d{6}\n(unclosed")
    page.locator("#id_reason").fill("Block loyalty numbers")  # the settings form's own reason
    click(page.get_by_role("button", name="Save settings"))

    summary = page.get_by_role("alert")
    assert "There is a problem" in summary.inner_text()
    assert "Extra blocked patterns" in summary.inner_text()
    assert "Not a valid regular expression" in summary.inner_text()  # the summary says it too
    assert summary.get_by_role("link").first.get_attribute("href").startswith("#")
    beside = page.locator(".field.has-error .field-error")
    assert "Pattern 2: Not a valid regular expression" in beside.inner_text()
    screenshot(page, "settings-invalid-pattern")
    assert_no_serious_axe_violations(page)

    page.get_by_label("Sample text").fill("my loyalty 123456")
    click(page.get_by_role("button", name="Check"))
    assert "Allowed." in page.get_by_role("status").inner_text()  # nothing was saved


def test_tokens_and_history_pages(admin_page, live_server):
    page = admin_page
    page.goto(f"{live_server.url}/staff/settings/tokens/")
    page.get_by_label("Name", exact=True).fill("booking-agent")
    page.get_by_label("Read a traveller's facts").check()
    page.get_by_label("Reason for this change").fill("New booking agent host")
    click(page.get_by_role("button", name="Create token"))
    assert page.get_by_label("Secret").input_value().startswith("mat_")
    field = page.get_by_label("Secret").bounding_box()
    card = page.locator(".card").first.bounding_box()
    assert field["width"] > card["width"] * 0.6  # the whole secret is visible, not a stub
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    click(page.get_by_role("button", name="Copy"))
    # the clipboard answers asynchronously: wait for the button to say so
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    screenshot(page, "settings-token-created")
    assert_no_serious_axe_violations(page)
    click(page.get_by_role("link", name="Back to service tokens"))
    screenshot(page, "settings-tokens")
    assert_no_serious_axe_violations(page)
    click(page.get_by_role("link", name="Policy history"))
    expect(page.get_by_text("New booking agent host")).to_be_visible()
    screenshot(page, "settings-history")
    assert_no_serious_axe_violations(page)


@pytest.mark.parametrize("role", [VIEWER, EDITOR])
def test_viewers_and_editors_get_no_settings_page(new_page, live_server, role):
    page = new_page()
    staff_login(page, live_server, user_with(role, f"user-{role}"), PASSWORD)
    for path in ("", "retention/", "tokens/"):
        response = page.goto(f"{live_server.url}/staff/settings/{path}")
        assert response.status == 403
    assert page.get_by_role("link", name="Settings", exact=True).count() == 0


# Each radio and checkbox with the first line of its label's words: where they are on the page.
_CHOICE_BOXES = """() => [
  ...document.querySelectorAll('main input[type=radio], main input[type=checkbox]')
].map((input) => {
    const label = input.labels && input.labels[0];
    const walker = label && document.createTreeWalker(label, NodeFilter.SHOW_TEXT);
    let text = null;
    while (walker && walker.nextNode()) {
      if (walker.currentNode.textContent.trim()) { text = walker.currentNode; break; }
    }
    if (!text) return {id: input.id, label: null};
    const range = document.createRange();
    range.selectNodeContents(text);
    const line = range.getClientRects()[0];
    const box = input.getBoundingClientRect();
    return {id: input.id, label: text.textContent.trim(),
            box: {left: box.left, right: box.right, top: box.top, bottom: box.bottom},
            line: {left: line.left, top: line.top, bottom: line.bottom}};
  })"""


def _assert_beside_their_labels(page) -> int:
    choices = page.evaluate(_CHOICE_BOXES)
    for choice in choices:
        assert choice["label"], f"{choice['id']} has no label"
        box, line = choice["box"], choice["line"]
        middle = (box["top"] + box["bottom"]) / 2
        assert line["top"] <= middle <= line["bottom"], f"{choice} is not on its label's line"
        assert 0 <= line["left"] - box["right"] <= 24, f"{choice}: label not just right of it"
    return len(choices)


def test_the_rule_forms_radios_and_checkboxes_sit_beside_their_labels_on_a_phone(
    new_page, live_server
):
    """At 390 pixels, as at 1280: each radio and checkbox on the retention rule form and its
    preview is on the same line as its label, just left of the words."""
    RetentionRule.objects.create(name="Sensitive facts", sensitive=True, ttl_days=180)
    page = new_page(viewport=PHONE)
    staff_login(page, live_server, user_with(PRIVACY_ADMIN, "pat.phone"), PASSWORD)
    page.goto(f"{live_server.url}/staff/settings/retention/add/")
    assert _assert_beside_their_labels(page) == 2  # delete after days / keep until deleted
    screenshot(page, "settings-rule-form-phone")

    page.get_by_label("Name").fill("Context a year")
    page.get_by_label("Category").select_option("context")
    page.get_by_label("Days after the fact last changed").fill("365")
    page.get_by_label("Reason").fill("policy v3")
    click(page.get_by_role("button", name="Preview the change"))
    expect(page.locator("#sensitive-override")).to_be_visible()
    assert _assert_beside_their_labels(page) >= 1  # the "keep sensitive facts longer" box
    assert_no_serious_axe_violations(page)
    screenshot(page, "settings-rule-preview-phone")
