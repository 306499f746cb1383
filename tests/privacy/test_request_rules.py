"""The record of a privacy request must be true: a request closes only with evidence the
service gathers itself (an erasure only when no memory is left), a note alone never closes
one, and a request about a traveller we hold nothing about closes with "nothing held"."""

from __future__ import annotations

import pytest
from django.utils import timezone

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import MemoryFact
from memoryadmin.privacy import flows, selectors
from memoryadmin.privacy import services as privacy
from memoryadmin.privacy.errors import MemoryRemains, RequestInvalid
from memoryadmin.privacy.models import PrivacyRequest, RequestStatus, WebhookDelivery
from memoryadmin.privacy.outbox import outbox_dispatch
from memoryadmin.privacy.webhooks import Outcome, delivery_record_attempt
from tests.factories import FactFactory, UserFactory

pytestmark = [pytest.mark.django_db]

S = "FF-932001"


@pytest.fixture
def editor() -> Actor:
    return Actor.staff(UserFactory(username="erin"))


def _request(kind: str, editor: Actor, subject_id: str = S) -> PrivacyRequest:
    return privacy.privacy_request_record(
        subject_id=subject_id,
        kind=kind,
        channel="phone",
        received_at=timezone.now(),
        actor=editor,
        note="called in",
    )


def test_completing_an_erasure_request_with_memory_left_is_refused_with_the_count(editor):
    for n in range(3):
        FactFactory(subject_id=S, key=f"seat_{n}", value="aisle")
    request = _request("erasure", editor)
    with pytest.raises(MemoryRemains) as refused:
        privacy.privacy_request_complete(
            request_id=request.pk, actor=editor, note="erased it all on the phone"
        )
    assert refused.value.facts == 3
    assert "3 facts" in refused.value.message
    request.refresh_from_db()
    assert request.status == RequestStatus.OPEN and request.evidence == {}
    assert [s.action for s in selectors.request_steps(request)] == ["received"]


def test_an_erasure_completes_with_rows_remaining_receipt_and_each_acknowledgement(
    editor, recipient, receiver
):
    FactFactory(subject_id=S, key="seat", value="aisle")
    request = _request("erasure", editor)
    outcome = flows.privacy_forget(
        subject_id=S, actor=editor, reason="traveller called on 3 Dec", request_id=request.pk
    )
    done = flows.privacy_verify_erasure(request_id=request.pk, actor=editor)
    assert done.status == RequestStatus.COMPLETED
    assert done.evidence["rows_remaining"] == 0
    assert done.evidence["receipt"] == outcome.receipt.number
    assert done.evidence["recipients"] == {
        "CRM": {"acknowledged": False, "status": "pending", "at": "", "attempts": 0}
    }
    erased = [s for s in selectors.request_steps(done) if s.action == "erased"]
    assert erased[0].note == "traveller called on 3 Dec"  # the reason typed, on the timeline

    # The recipient acknowledges: recorded in the evidence and the timeline, without anyone.
    outbox_dispatch()
    delivery = WebhookDelivery.objects.get(event__event_type="memory.subject.erased")
    now = timezone.now()
    delivery_record_attempt(
        delivery_id=delivery.pk, outcome=Outcome(True, 204, 5), attempted_at=now
    )
    done.refresh_from_db()
    assert done.evidence["recipients"]["CRM"]["acknowledged"] is True
    assert done.evidence["recipients"]["CRM"]["at"] == now.isoformat()
    assert selectors.request_steps(done)[-1].action == "acknowledged"


def test_a_note_alone_never_completes_a_request(editor):
    FactFactory(subject_id=S, key="seat", value="aisle")
    for kind in ("access", "rectification", "restriction", "objection"):
        request = _request(kind, editor)
        with pytest.raises(RequestInvalid) as refused:
            privacy.privacy_request_complete(request_id=request.pk, actor=editor, note="done")
        assert "note" in refused.value.fields
        request.refresh_from_db()
        assert request.status == RequestStatus.OPEN


def test_an_access_request_completes_with_its_files_hash(editor):
    FactFactory(subject_id=S, key="seat", value="aisle")
    request = _request("access", editor)
    flows.privacy_export_record(subject_id=S, sha256="cd" * 32, actor=editor, request_id=request.pk)
    done = privacy.privacy_request_complete(request_id=request.pk, actor=editor)
    assert done.status == RequestStatus.COMPLETED and done.evidence == {"sha256": "cd" * 32}


def test_a_rectification_completes_with_the_correction_event(editor):
    fact = FactFactory(subject_id=S, key="seat", value="aisle")
    request = _request("rectification", editor)
    services.fact_edit(
        subject_id=S,
        key="seat",
        value="window",
        expected_version=fact.version,
        actor=editor,
        reason="traveller's call",
    )
    done = privacy.privacy_request_complete(request_id=request.pk, actor=editor)
    assert done.status == RequestStatus.COMPLETED
    event = selectors.correction_since(S, request.received_from)
    assert done.evidence == {"correction_event": event.pk, "key_hash": event.key_hash}


def test_a_restriction_completes_with_the_pause(editor):
    FactFactory(subject_id=S, key="seat", value="aisle")
    request = _request("restriction", editor)
    services.subject_set_preferences(
        subject_id=S, memory_paused=True, memory_use_paused=False, actor=editor, reason="call"
    )
    done = privacy.privacy_request_complete(request_id=request.pk, actor=editor)
    assert done.evidence == {"memory_paused": True}


@pytest.mark.parametrize("kind", ["erasure", "access", "rectification", "objection"])
def test_a_request_about_a_traveller_we_hold_nothing_about_completes_with_nothing_held(
    editor, kind
):
    request = _request(kind, editor, subject_id="FF-NEVER-SEEN")
    done = privacy.privacy_request_complete(request_id=request.pk, actor=editor)
    assert done.status == RequestStatus.COMPLETED
    assert done.evidence["nothing_held"] is True
    assert not MemoryFact.objects.filter(subject_id="FF-NEVER-SEEN").exists()
