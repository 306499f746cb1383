"""Privacy requests in Chromium. Staff: record a phone request, export for the traveller and
close it with the evidence; an overdue request on the overview; refusing needs a ground.
Traveller: forget everything makes a completed erasure request with its receipt and
verification, which staff then see; under a legal hold the traveller is told plainly, in both
languages, and nothing is erased. Every page passes axe and leaves a screenshot."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta
from pathlib import Path

import pytest

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import MemoryFact
from memoryadmin.portal.services import portal_link_issue
from memoryadmin.privacy import clock
from memoryadmin.privacy.models import PrivacyRequest, RequestStatus
from memoryadmin.privacy.services import privacy_request_record
from memoryadmin.staff.roles import EDITOR, PRIVACY_ADMIN, VIEWER
from tests.factories import FactFactory, UserFactory
from tests.staff.conftest import PASSWORD, make_staff
from tests.support.browser import (
    PHONE,
    click,
    page_check,
    staff_login,
)
from tests.support.package import rows

pytestmark = pytest.mark.browser


def test_record_a_phone_request_export_for_the_traveller_and_close_it(page, live_server, tmp_path):
    FactFactory(subject_id="FF-940001", key="seat_preference", value="Prefers aisle seats")
    staff_login(page, live_server, make_staff("eddie", EDITOR), PASSWORD)
    page.goto(f"{live_server.url}/staff/privacy/")
    page_check(page, "privacy-requests-empty")
    click(page.get_by_role("link", name="Record a request"))
    page.get_by_label("Traveller id").fill("FF-940001")
    page.get_by_label("What they asked for").select_option("access")
    page.get_by_label("How it arrived").select_option("phone")
    page.get_by_label("Note").fill("Called the Taipei contact centre, asked for a copy")
    page.get_by_label("How the traveller's identity was verified").select_option("checked")
    page.get_by_label("What was checked").fill("booking reference and date of birth")
    page_check(page, "privacy-request-record")
    click(page.get_by_role("button", name="Record the request"))

    req = PrivacyRequest.objects.get()
    assert (req.kind, req.channel, req.status) == ("access", "phone", "open")
    assert req.due_on == clock.add_months(clock.today(), 1)
    assert "Recorded " + req.number in page.locator(".flashes").inner_text()
    with page.expect_download() as download_info:
        click(page.get_by_role("button", name="Export for the traveller"))
    assert download_info.value.suggested_filename.startswith("memory-FF-940001-")
    path = Path(download_info.value.path())
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    assert "Prefers aisle seats" in rows(path.read_bytes(), "facts.csv")[1]

    page.reload()
    assert page.locator('[data-evidence="sha256"]').inner_text() == sha
    page.get_by_label("What was done").fill("Sent the file by e-mail")
    click(page.get_by_role("button", name="Complete with the evidence"))
    assert page.locator("[data-status]").inner_text().startswith("Completed")
    page_check(page, "privacy-request-completed")
    req.refresh_from_db()
    assert req.status == RequestStatus.COMPLETED and req.evidence == {"sha256": sha}
    assert [s.action for s in req.steps.order_by("id")] == [
        "received",
        "started",
        "exported",
        "completed",
    ]


def test_an_overdue_request_on_the_overview(page, live_server):
    old = privacy_request_record(
        subject_id="FF-940002",
        kind="erasure",
        channel="letter",
        received_on=clock.today() - timedelta(days=40),
        actor=Actor.system("test"),
        note="",
    )
    staff_login(page, live_server, make_staff("vera", VIEWER), PASSWORD)
    page.goto(f"{live_server.url}/staff/")
    stat = page.locator('[data-stat="privacy-overdue"]')
    assert " ".join(stat.inner_text().split()) == "1 privacy requests overdue"
    assert stat.evaluate("e => getComputedStyle(e).backgroundColor") != "rgba(0, 0, 0, 0)"
    page_check(page, "overview-privacy-overdue")
    click(stat.get_by_role("link"))
    overdue = page.locator("table.requests-overdue")
    assert old.number in overdue.inner_text() and "Overdue" in overdue.inner_text()
    page_check(page, "privacy-requests-overdue")
    click(page.get_by_role("link", name=old.number).first)
    assert "Overdue." in page.locator("main").inner_text()
    assert page.get_by_role("link", name="Refuse…").count() == 0  # a viewer reads only


def test_refusing_a_request_needs_a_ground(page, live_server):
    req = privacy_request_record(
        subject_id="FF-940003",
        kind="objection",
        channel="email",
        received_on=clock.today(),
        actor=Actor.system("t"),
        note="",
    )
    staff_login(page, live_server, make_staff("priya", PRIVACY_ADMIN), PASSWORD)
    page.goto(f"{live_server.url}/staff/privacy/requests/{req.number}/")
    click(page.get_by_role("link", name="Refuse…"))
    click(page.get_by_role("button", name="Refuse the request"))
    # the summary says the problem and links to the field, which says it again beside itself
    summary = page.locator(".error-summary")
    assert "Legal ground: Give the legal ground" in summary.inner_text()
    assert summary.get_by_role("link").first.get_attribute("href").startswith("#")
    assert "Give the legal ground" in page.locator(".field.has-error .field-error").inner_text()
    page_check(page, "privacy-request-refuse-error")
    req.refresh_from_db()
    assert req.status == RequestStatus.OPEN
    page.get_by_label("Legal ground").fill("Art. 21(1): compelling legitimate grounds")
    click(page.get_by_role("button", name="Refuse the request"))
    assert "Refused" in page.locator(".flashes").inner_text()
    req.refresh_from_db()
    assert (req.status, req.ground) == ("refused", "Art. 21(1): compelling legitimate grounds")


def _portal(new_page, live_server, subject_id: str, locale: str = "en-GB"):
    page = new_page(viewport=PHONE, locale=locale)
    secret = portal_link_issue(subject_id=subject_id, issued_by="browser test").secret
    page.goto(f"{live_server.url}/portal/open/{secret}")
    click(page.locator("[data-portal-open]"))  # a GET only shows the button
    return page


def test_forget_everything_makes_a_completed_erasure_request_that_staff_see(new_page, live_server):
    FactFactory(subject_id="FF-940004", key="meal", value="Asks for a vegan meal")
    FactFactory(subject_id="FF-940004", key="party", value="Travels with two children")
    page = _portal(new_page, live_server, "FF-940004")
    click(page.get_by_role("link", name="Forget everything"))
    click(page.get_by_role("link", name="Continue"))
    page.get_by_label("I understand that this can't be undone.").check()
    click(page.get_by_role("button", name="Forget everything"))
    number = page.locator(".receipt-number").inner_text()
    main = page.locator("main").inner_text()
    assert "Nothing we keep still holds what was erased." in main
    page_check(page, "portal-receipt-with-request")

    req = PrivacyRequest.objects.get(subject_id="FF-940004")
    assert (req.kind, req.channel, req.status) == ("erasure", "portal", "completed")
    assert req.evidence["receipt"] == number and req.evidence["rows_remaining"] == 0
    assert req.number not in main  # one reference number for the traveller: the receipt's

    staff = new_page()
    staff_login(staff, live_server, make_staff("vera", VIEWER), PASSWORD)
    staff.goto(f"{live_server.url}/staff/privacy/?kind=erasure&status=completed")
    click(staff.get_by_role("link", name=req.number))
    assert staff.locator('[data-evidence="receipt"]').inner_text() == number
    assert staff.locator('[data-evidence="rows_remaining"]').inner_text().startswith("0 rows")
    timeline = staff.locator("main table").last.inner_text()
    assert "The traveller, in the privacy portal" in timeline
    assert "traveller:" not in timeline  # the internal label stays out of sight
    page_check(staff, "privacy-request-erasure-from-portal")


@pytest.mark.parametrize(
    ("lang", "locale", "told"),
    [
        ("en", "en-GB", "We can't forget everything yet"),
        ("zh-hant", "zh-TW", "我們暫時還不能忘記一切"),
    ],
)
def test_under_legal_hold_the_traveller_is_told_and_nothing_is_erased(
    new_page, live_server, lang, locale, told
):
    subject = f"FF-HOLD-{lang.upper()}"
    FactFactory(subject_id=subject, key="meal", value="Asks for a vegan meal")
    admin = UserFactory(username=f"lex-{lang}")
    services.subject_set_legal_hold(
        subject_id=subject, hold=True, actor=Actor.staff(admin), reason="case 2027-14"
    )
    page = _portal(new_page, live_server, subject, locale)
    page.goto(f"{live_server.url}/portal/forget/confirm")
    confirm = page.locator("form").filter(has=page.locator('input[type="checkbox"]'))
    confirm.locator('input[type="checkbox"]').check()
    click(confirm.locator("button[type=submit]"))
    assert page.get_by_role("heading", level=1).inner_text() == told
    req = PrivacyRequest.objects.get(subject_id=subject)
    assert req.number in page.locator("main").inner_text()
    assert req.status == RequestStatus.ON_HOLD and "17(3)(e)" in req.ground
    assert MemoryFact.objects.filter(subject_id=subject).count() == 1
    page_check(page, f"portal-forget-held-{lang}")
    assert re.search(r"PR-[0-9A-Z]{4}-[0-9A-Z]{4}", page.locator("main").inner_text())


def test_the_receipt_and_the_request_list_each_system_told_and_a_failing_one_is_replayed(
    new_page, live_server, settings
):
    """(Art. 19) Two recipients, real receivers: one acknowledges, one answers 500. The
    traveller's receipt and the erasure request's page list both and which acknowledged; the
    one that keeps failing is marked failing on the overview, linked to its row; a privacy admin
    replays its delivery once it is back, and the request's page then shows it acknowledged."""
    from memoryadmin.privacy import webhooks
    from memoryadmin.privacy.models import WebhookDelivery, WebhookRecipient
    from memoryadmin.privacy.recipients import webhook_recipient_add

    from .receiver import Receiver

    settings.DEBUG = True  # the receivers are plain http:// on 127.0.0.1
    crm, warehouse = Receiver().start(), Receiver().start()
    try:
        for name, receiver, shown in (
            ("CRM", crm, "Our customer service"),
            ("Warehouse", warehouse, "Our reports"),
        ):
            _, receiver.secret = webhook_recipient_add(
                name=name,
                url=receiver.url,
                events=None,
                actor=Actor.system("test"),
                traveller_name_en=shown,
            )
        warehouse.statuses = [500] * 20
        FactFactory(subject_id="FF-940010", key="meal", value="Asks for a vegan meal")
        page = _portal(new_page, live_server, "FF-940010")
        page.goto(f"{live_server.url}/portal/forget/confirm")
        page.get_by_label("I understand that this can't be undone.").check()
        click(page.get_by_role("button", name="Forget everything"))
        told = page.locator("#told").inner_text()  # in the traveller's words, not "CRM"
        assert "Our customer service: confirmed" in told
        assert "Our reports: not confirmed yet" in told and "CRM" not in told
        page_check(page, "portal-receipt-systems-told")
        [got] = [r for r in crm.received if r.payload["type"] == "memory.subject.erased"]
        assert got.verified and "vegan" not in got.body.decode()

        req = PrivacyRequest.objects.get(subject_id="FF-940010")
        admin = new_page()
        staff_login(admin, live_server, make_staff("priya", PRIVACY_ADMIN), PASSWORD)
        admin.goto(f"{live_server.url}/staff/privacy/requests/{req.number}/")
        systems = admin.get_by_role("table", name="Recipients of the erasure")
        assert systems.get_by_role("row", name="CRM").inner_text().split("\t")[1] == "Yes"
        assert "Not yet" in systems.get_by_role("row", name="Warehouse").inner_text()

        # The worker's retries keep failing (tried here, as beat's sweep would).
        failing = WebhookRecipient.objects.get(name="Warehouse")
        pending = WebhookDelivery.objects.filter(recipient=failing).order_by("id")
        while not WebhookRecipient.objects.get(pk=failing.pk).failing:
            webhooks.delivery_attempt(delivery_id=pending.first().pk)
        admin.goto(f"{live_server.url}/staff/")
        stat = admin.locator('[data-stat="failing-recipients"]')
        assert " ".join(stat.inner_text().split()) == "1 webhook recipient failing: Warehouse"
        page_check(admin, "overview-failing-recipient")
        click(stat.get_by_role("link", name="Warehouse"))
        row = admin.locator(f"#recipient-{failing.pk}")
        assert "Failing" in row.inner_text() and "failures in a row" in row.inner_text()

        warehouse.statuses = []  # it is back: a privacy admin replays the erasure
        erased = pending.get(event__event_type="memory.subject.erased")
        click(
            admin.get_by_role("row")
            .filter(has_text=erased.event.msg_id)
            .filter(has_text="Warehouse")
            .get_by_role("link")
        )
        click(admin.get_by_role("button", name="Replay this delivery now"))
        assert "Replayed: Warehouse answered 200." in admin.locator(".flashes").inner_text()
        last = admin.locator("table tbody tr").last.inner_text()
        assert "Answered 200 (acknowledged)" in last and last.rstrip().endswith("Yes")
        page_check(admin, "webhook-delivery-replayed")
        assert warehouse.received[-1].verified
        assert warehouse.received[-1].headers["webhook-id"] == erased.event.msg_id
        admin.goto(f"{live_server.url}/staff/privacy/requests/{req.number}/")
        assert systems.get_by_role("row", name="Warehouse").inner_text().split("\t")[1] == "Yes"
        admin.goto(f"{live_server.url}/staff/")
        assert admin.locator('[data-stat="failing-recipients"]').count() == 0
        page.reload()
        assert "Our reports: confirmed" in page.locator("#told").inner_text()

        viewer = new_page()
        staff_login(viewer, live_server, make_staff("vera", VIEWER), PASSWORD)
        viewer.goto(f"{live_server.url}/staff/privacy/webhooks/deliveries/{erased.pk}/")
        assert viewer.get_by_role("button", name="Replay this delivery now").count() == 0
    finally:
        crm.stop()
        warehouse.stop()
