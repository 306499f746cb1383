"""`memory.fact.corrected` on every path by which a person corrects a value (staff's edit form,
the traveller's portal), written in the correcting transaction and delivered to a real HTTP
receiver that verifies it with the standardwebhooks library; never a value or a key. The
agent's replacement of a value is the memory learning, not a correction: no event."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.urls import reverse

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.erasure import key_digest
from memoryadmin.facts.models import MemoryFact
from memoryadmin.privacy import flows
from memoryadmin.privacy.models import DeliveryStatus, OutboxEvent, WebhookDelivery
from tests.factories import FactFactory
from tests.staff.conftest import editor  # noqa: F401

pytestmark = [pytest.mark.django_db]

S = "FF-950001"
KEY = "dietary_note"
OLD = "Eats no shellfish on Cathay flights"
NEW = "Eats no shellfish or peanuts"


def _no_value_or_key(body: str) -> None:
    for secret in (KEY, "dietary", OLD, NEW, "shellfish", "peanuts"):
        assert secret not in body


def _corrected() -> list[OutboxEvent]:
    return list(OutboxEvent.objects.filter(event_type="memory.fact.corrected").order_by("id"))


def test_a_staff_edit_sends_a_signed_keyless_correction(
    client,
    editor,  # noqa: F811
    recipient,
    receiver,
    django_capture_on_commit_callbacks,  # noqa: F811
):
    fact = FactFactory(subject_id=S, key=KEY, value=OLD, category="constraint")
    client.force_login(editor)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("staff:fact_edit", args=[S, KEY]),
            {
                "value": NEW,
                "category": "constraint",
                "reason": "traveller called",
                "version": fact.version,
            },
        )
    assert response.status_code == 302
    assert MemoryFact.objects.get(subject_id=S, key=KEY).value == NEW

    [got] = receiver.received
    assert got.verified, "the receiver's standardwebhooks check failed"
    assert got.payload["type"] == "memory.fact.corrected"
    assert got.payload["data"] == {
        "subject_id": S,
        "key_hash": key_digest(S, KEY),
        "receipt": got.headers["webhook-id"],
        "path": "staff",
        "occurred_at": got.payload["data"]["occurred_at"],
    }
    _no_value_or_key(got.body.decode())
    assert WebhookDelivery.objects.get().status == DeliveryStatus.DELIVERED


def test_a_portal_correction_names_its_rectification_request(
    recipient, receiver, django_capture_on_commit_callbacks
):
    fact = FactFactory(subject_id=S, key=KEY, value=OLD)
    with django_capture_on_commit_callbacks(execute=True):
        request = flows.privacy_correct(
            subject_id=S,
            key=KEY,
            value=NEW,
            expected_version=fact.version,
            actor=Actor.customer(S),
            reason="portal",
        )
    corrected = [p for p in receiver.payloads() if p["type"] == "memory.fact.corrected"]
    assert len(corrected) == 1  # one event, not one from fact_edit and one from the flow
    data = corrected[0]["data"]
    assert (data["path"], data["request"], data["key_hash"]) == (
        "traveller",
        request.number,
        key_digest(S, KEY),
    )
    assert all(item.verified for item in receiver.received)
    for item in receiver.received:
        _no_value_or_key(item.body.decode())


def test_a_staff_edit_conflict_or_an_unchanged_value_sends_nothing(
    client,
    editor,  # noqa: F811
    recipient,  # noqa: F811
):
    fact = FactFactory(subject_id=S, key=KEY, value=OLD, category="constraint")
    client.force_login(editor)
    url = reverse("staff:fact_edit", args=[S, KEY])
    stale = client.post(
        url, {"value": NEW, "category": "constraint", "reason": "x", "version": fact.version + 5}
    )
    assert stale.status_code == 409
    # a new category alone is not a correction of what other systems hold
    client.post(
        url,
        {
            "value": OLD,
            "category": "preference",
            "reason": "recategorised",
            "version": fact.version,
        },
    )
    assert MemoryFact.objects.get(subject_id=S, key=KEY).category == "preference"
    assert _corrected() == []


def test_the_agent_replacing_a_value_is_not_a_correction(recipient):
    FactFactory(subject_id=S, key=KEY, value=OLD)
    services.fact_upsert(
        subject_id=S,
        facts=[services.FactDraft(KEY, NEW, "preference")],
        actor=Actor.agent("host-1"),
        reason="said in chat",
    )
    assert MemoryFact.objects.get(subject_id=S, key=KEY).value == NEW
    assert _corrected() == []


def test_a_correction_rolled_back_leaves_no_event(recipient, receiver):
    fact = FactFactory(subject_id=S, key=KEY, value=OLD)

    class Boom(Exception):
        pass

    with pytest.raises(Boom), transaction.atomic():
        services.fact_edit(
            subject_id=S,
            key=KEY,
            value=NEW,
            expected_version=fact.version,
            actor=Actor.customer(S),
            reason="x",
        )
        assert len(_corrected()) == 1  # written in the correcting transaction
        raise Boom
    assert _corrected() == []
    assert MemoryFact.objects.get(subject_id=S, key=KEY).value == OLD
    assert receiver.received == []
