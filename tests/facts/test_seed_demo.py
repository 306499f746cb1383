"""`manage.py seed_demo`: the demo a newcomer sees after `make run`."""

import pytest
from django.test import Client

from memoryadmin.facts import selectors
from memoryadmin.facts.models import EventAction, FactEvent, FactStatus, MemoryFact, Subject
from tests.support.dbscan import occurrences
from tests.support.demo import free_url, seed_demo

pytestmark = pytest.mark.django_db


def test_seed_demo_loads_travellers_history_and_logins_and_is_idempotent(settings, capsys):
    seed_demo(settings)
    out = capsys.readouterr().out
    assert "editor / editor-demo-2026" in out and "/login/" in out
    assert "privacy admin " in out and "privacy_admin" not in out  # roles in words
    assert Subject.objects.count() == 20
    facts, events = MemoryFact.objects.count(), FactEvent.objects.count()
    assert MemoryFact.objects.filter(status=FactStatus.PENDING_REVIEW, sensitive=True).exists()
    assert MemoryFact.objects.filter(category="constraint").count() >= 5
    assert MemoryFact.objects.filter(value__contains="走道").exists()
    actions = set(FactEvent.objects.values_list("action", flat=True))
    assert {EventAction.CREATED, EventAction.UPDATED, EventAction.APPROVED} <= actions
    assert all(f.expires_at for f in MemoryFact.objects.all())  # the demo retention rules apply
    assert [f.key for f in selectors.tier_one("FF-100231")][0] == "overnight_flight"

    differentiators = _differentiators()

    seed_demo(settings)
    assert (MemoryFact.objects.count(), FactEvent.objects.count()) == (facts, events)
    assert _differentiators() == differentiators  # nothing of the demo is made twice


def _differentiators() -> tuple[int, ...]:
    from memoryadmin.access.models import StaffAccess
    from memoryadmin.privacy.models import PrivacyRequest, WebhookDelivery, WebhookRecipient
    from memoryadmin.usage.models import MemoryUse

    return (
        PrivacyRequest.objects.count(),
        WebhookRecipient.objects.count(),
        WebhookDelivery.objects.count(),
        StaffAccess.objects.count(),
        MemoryUse.objects.count(),
    )


def test_the_demo_traveller_shows_every_differentiator_on_the_first_visit(settings):
    """`make run` prints a portal link for FF-100231: their own words, one fact the assistant
    saved, use receipts from several conversations, a request with its receipt told to a
    recipient named for travellers, and staff looks."""
    from memoryadmin.portal.services import portal_link_issue
    from memoryadmin.privacy.models import PrivacyRequest, RequestKind, RequestStatus
    from memoryadmin.usage.models import MemoryUse

    seed_demo(settings)
    demo = "FF-100231"
    assert (
        MemoryFact.objects.filter(subject_id=demo, evidence_origin="extraction")
        .exclude(evidence="")
        .exists()
    )
    assert MemoryFact.objects.filter(subject_id=demo, origin="agent").exists()
    assert MemoryUse.objects.filter(subject_id=demo).values("session_tag").distinct().count() >= 3
    erasure = PrivacyRequest.objects.get(subject_id=demo, kind=RequestKind.ERASURE)
    assert erasure.status == RequestStatus.COMPLETED and erasure.evidence["rows_remaining"] == 0

    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    secret = portal_link_issue(subject_id=demo, issued_by="test").secret
    assert client.post(f"/portal/open/{secret}").status_code == 302
    home = client.get("/portal/").content.decode()
    assert home.count("Why the assistant knows this") >= 2
    assert "You said on" in home and "Used in 4 conversations" in home
    assert "Saved by the assistant during a chat on" in home
    requests = client.get("/portal/requests").content.decode()
    receipt = erasure.evidence["receipt"]
    assert receipt in requests and "A correction" in requests and "A copy of your data" in requests
    told = client.get(f"/portal/receipts/{receipt}").content.decode()
    assert "Our frequent flyer programme: confirmed" in told and "CRM" not in told
    looked = client.get("/portal/looked").content.decode()
    # yesterday a support agent twice and a privacy officer once; a support agent days before
    assert "Support agents looked 2 times." in looked and "A privacy officer looked once." in looked
    assert looked.count("A support agent looked once.") == 1


def test_the_demo_editor_can_log_in_and_see_travellers(settings):
    seed_demo(settings)
    client = Client()
    assert client.login(username="editor", password="editor-demo-2026")
    page = client.get("/staff/travellers/")
    assert page.status_code == 200
    assert "FF-100231" in page.content.decode()


def test_seed_demo_prints_the_address_it_is_served_on(settings, capsys):
    """`make run RUN_PORT=8765` passes its own address: every printed link must use it."""
    base_url = seed_demo(settings, base_url=free_url() + "/")
    out = capsys.readouterr().out
    assert f"{base_url}login/" in out and f"{base_url}api/v1/docs/" in out
    assert f"{base_url}demo/webhooks/" in out and ":8000" not in out


def test_the_demo_has_a_quality_sample_with_marks(settings):
    """`make run` shows figures on "Memory quality" and leaves facts to mark."""
    from memoryadmin.quality.models import QualitySampleItem
    from memoryadmin.quality.selectors import quality_report

    seed_demo(settings)
    items = QualitySampleItem.objects.all()
    assert items.count() >= 10
    assert items.filter(mark="").exists() and items.filter(mark="wrong").count() == 2
    report = quality_report()
    assert report.overall.marked >= 8 and 0 < report.overall.value < 1
    seed_demo(settings)
    assert QualitySampleItem.objects.count() == items.count()  # not drawn twice


def test_the_demo_spreads_over_five_weeks_and_its_turns_agree(settings):
    """The chart shows a month, not one spike; each fact learned from a conversation has the
    extraction job that learned it (same session, same turn, before it); a turn's receipts name
    only versions that existed then, never one learned in that turn or a later one; no session
    tag is a placeholder."""
    import re
    from datetime import timedelta

    from django.utils import timezone

    from memoryadmin.extraction.models import ExtractionJob, JobStatus
    from memoryadmin.usage.models import MemoryUse

    seed_demo(settings)
    now = timezone.now()
    days = {at.date() for at in FactEvent.objects.values_list("created_at", flat=True)}
    assert len(days) >= 15 and min(days) <= (now - timedelta(days=30)).date()
    assert max(FactEvent.objects.values_list("created_at", flat=True)) <= now

    learned = FactEvent.objects.filter(actor_kind="extraction", reason__startswith="learned from")
    assert learned.count() >= 20
    for event in learned:
        turn = event.reason.removeprefix("learned from turn ")
        job = ExtractionJob.objects.get(
            subject_id=event.subject_id, session_tag=event.session_tag, turn_id=turn
        )
        assert job.status == JobStatus.SUCCEEDED and job.stored + job.updated >= 1
        assert job.queued_at <= event.created_at <= job.finished_at
        assert event.actor_label == f"extraction job {job.pk}"

    uses = MemoryUse.objects.all()
    assert uses.count() >= 30 and not uses.filter(version_assumed=True).exists()
    for use in uses:
        events = FactEvent.objects.filter(subject_id=use.subject_id, key_hash=use.key_hash)
        assert events.order_by("created_at").first().created_at < use.used_at
        for reason in events.filter(session_tag=use.session_tag).values_list("reason", flat=True):
            if taught := re.fullmatch(r"learned from turn (\d+)", reason):
                assert int(taught[1]) < int(use.turn_id)  # learned before the turn used it

    tags = [
        *FactEvent.objects.values_list("session_tag", flat=True),
        *uses.values_list("session_tag", flat=True),
        *ExtractionJob.objects.values_list("session_tag", flat=True),
    ]
    assert all(re.fullmatch(r"[0-9a-f]{12}", tag) and set(tag) != {"0"} for tag in tags if tag)


def test_the_demo_deliveries_went_out_and_were_acknowledged(settings):
    """Every event of the demo reached its receiver over HTTP and was acknowledged (204), at
    the time of the step that wrote it; nothing waits and no recipient is failing."""
    from memoryadmin.privacy.models import (
        DeliveryAttempt,
        DeliveryStatus,
        OutboxEvent,
        WebhookDelivery,
        WebhookRecipient,
    )

    base_url = seed_demo(settings)
    recipient = WebhookRecipient.objects.get()
    assert recipient.url == f"{base_url}/demo/webhooks/" and not recipient.failing
    deliveries = WebhookDelivery.objects.select_related("event")
    assert deliveries.count() >= 8
    assert not OutboxEvent.objects.filter(dispatched_at__isnull=True).exists()
    for delivery in deliveries:
        assert delivery.status == DeliveryStatus.DELIVERED and delivery.attempts == 1
        assert delivery.delivered_at - delivery.event.created_at < timedelta_seconds(5)
    assert set(DeliveryAttempt.objects.values_list("status_code", "ok")) == {(204, True)}


def timedelta_seconds(seconds: float):
    from datetime import timedelta

    return timedelta(seconds=seconds)


def test_the_demo_shows_a_restricted_fact_and_a_redacted_version(settings):
    """Issue 41's rights in the demo: each portal traveller stopped the use of one fact (kept,
    not used, a restriction request open on the clock, their words on the staff page), a
    privacy admin redacted the seat version that named a colleague (gone from every snapshot,
    the current value untouched)."""
    from memoryadmin.privacy.models import PrivacyRequest, RequestKind, RequestStatus
    from memoryadmin.staff.demo.data import RESTRICTED, WINDOW_QUOTE, WINDOW_SEAT

    seed_demo(settings)
    for demo in ("FF-100231", "FF-100232"):
        key, note = RESTRICTED[demo]
        fact = MemoryFact.objects.get(subject_id=demo, key=key)
        assert fact.restricted_at and fact.restriction_note == note and fact.value
        assert key not in [f.key for f in selectors.tier_one(demo)]
        restriction = PrivacyRequest.objects.get(subject_id=demo, kind=RequestKind.RESTRICTION)
        assert restriction.status == RequestStatus.IN_PROGRESS and restriction.due_on

        seat = MemoryFact.objects.get(subject_id=demo, key="seat_preference")
        assert seat.version == 2 and ("aisle" in seat.value or "走道" in seat.value)
        redacted = FactEvent.objects.get(subject_id=demo, action=EventAction.VERSION_REDACTED)
        assert redacted.after["redacted_version"] == 1 and redacted.actor_label == "privacy"
        for words in (WINDOW_SEAT[demo], WINDOW_QUOTE[demo]):  # in no row of any table
            assert occurrences(words) == {}, words

    client = Client()
    assert client.login(username="editor", password="editor-demo-2026")
    page = client.get("/staff/travellers/FF-100231/").content.decode()
    assert "Restricted by the traveller" in page and "For work I travel on my own." in page


def test_the_demo_download_records_the_package_the_portal_hands_over(monkeypatch):
    """The demo's "Download my data" closes its access request with the SHA-256 of the ZIP
    package in the traveller's language, as the portal's download does (not of the old JSON)."""
    from django.utils import timezone

    from memoryadmin.facts import services
    from memoryadmin.facts.actors import Actor
    from memoryadmin.privacy.models import PrivacyRequest, RequestKind
    from memoryadmin.privacy.package import traveller_package
    from memoryadmin.staff.demo import story

    demo = "FF-100232"
    services.fact_upsert(
        subject_id=demo,
        facts=[services.FactDraft("seat_preference", "長途航班偏好靠走道座位", "preference")],
        actor=Actor.customer(demo),
        reason="test",
    )
    moment = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: moment)  # the package names its moment
    handed_over = traveller_package(demo, language="zh-hant")
    story.downloaded(demo)
    access = PrivacyRequest.objects.get(subject_id=demo, kind=RequestKind.ACCESS)
    assert access.evidence["sha256"] == handed_over.sha256
