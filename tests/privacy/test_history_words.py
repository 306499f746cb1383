"""The policy history says an erasure's webhook state in words, as the request's page says it
and from the same source: a recipient that acknowledged after the request closed reads
"acknowledged" on both pages, never a Python dict; field names read as labels."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.utils import timezone

from memoryadmin.facts.actors import Actor
from memoryadmin.privacy import flows
from memoryadmin.privacy import services as privacy
from memoryadmin.privacy.models import WebhookDelivery
from memoryadmin.privacy.outbox import outbox_dispatch
from memoryadmin.privacy.webhooks import Outcome, delivery_record_attempt
from memoryadmin.staff.roles import PRIVACY_ADMIN
from tests.factories import FactFactory
from tests.staff.conftest import make_staff

pytestmark = pytest.mark.django_db

S = "FF-932777"


def _text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def test_the_history_reads_the_webhook_state_as_the_request_page_does(recipient, receiver):
    admin = make_staff("priya", PRIVACY_ADMIN)
    FactFactory(subject_id=S, key="seat", value="aisle")
    request = privacy.privacy_request_record(
        subject_id=S,
        kind="erasure",
        channel="phone",
        received_at=timezone.now(),
        actor=Actor.staff(admin),
        note="called in",
    )
    flows.privacy_forget(
        subject_id=S, actor=Actor.staff(admin), reason="asked", request_id=request.pk
    )
    flows.privacy_verify_erasure(request_id=request.pk, actor=Actor.staff(admin))
    client = Client()
    client.force_login(admin)
    before = _text(client.get("/staff/settings/history/"))
    assert "CRM: not yet (waiting)" in before

    outbox_dispatch()
    delivery = WebhookDelivery.objects.get(event__event_type="memory.subject.erased")
    delivery_record_attempt(
        delivery_id=delivery.pk, outcome=Outcome(True, 204, 5), attempted_at=timezone.now()
    )
    history = client.get("/staff/settings/history/").content.decode()
    text = _text(client.get("/staff/settings/history/"))
    assert "CRM: acknowledged on" in text and "not yet" not in text
    assert "{" not in text and "'acknowledged'" not in history and "False" not in text
    for label in ("rows remaining", "traveller name zh hant", "verified at", "nothing held"):
        assert label not in text
    assert "rows still holding erased facts" in text and "receipt number" in text
    page = _text(client.get(f"/staff/privacy/requests/{request.number}/"))
    assert "CRM Yes" in page  # the request's page: Acknowledged, Yes


def test_a_correction_requests_evidence_names_the_topic_and_the_versions():
    """Not "Fact corrected (keyed hash) #7014…": which fact, from which version to which; an
    erased fact only by its keyed hash."""
    from memoryadmin.facts import services

    admin = make_staff("priya", PRIVACY_ADMIN)
    FactFactory(subject_id=S, key="seat_preference", value="aisle")
    FactFactory(subject_id=S, key="meal_preference", value="vegetarian")
    client = Client()
    client.force_login(admin)
    request = privacy.privacy_request_record(
        subject_id=S,
        kind="rectification",
        channel="phone",
        received_at=timezone.now(),
        actor=Actor.staff(admin),
        note="called in",
    )
    from memoryadmin.facts.models import MemoryFact

    seat = MemoryFact.objects.get(subject_id=S, key="seat_preference")
    services.fact_edit(
        subject_id=S,
        key="seat_preference",
        value="window",
        expected_version=seat.version,
        actor=Actor.staff(admin),
        reason="traveller's call",
    )
    privacy.privacy_request_complete(request_id=request.pk, actor=Actor.staff(admin))
    text = _text(client.get(f"/staff/privacy/requests/{request.number}/"))
    assert "Seat preference corrected, version 1 → 2" in text
    assert "keyed hash" not in text

    services.fact_delete(subject_id=S, key="seat_preference", actor=Actor.staff(admin))
    text = _text(client.get(f"/staff/privacy/requests/{request.number}/"))
    assert "A fact since erased (keyed hash #" in text and "Seat preference" not in text
