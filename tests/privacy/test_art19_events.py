"""Art. 19: a recipient registered for erasure events is also told of rectifications and
restrictions (`memory.rectified`, `memory.restricted`, `memory.unrestricted`), signed the same
way (the receiver verifies each with the standardwebhooks library), with no value, no key and no
note, and acknowledged. A recipient that takes `memory.fact.corrected` keeps getting that one,
once per correction."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memoryadmin.facts.actors import Actor
from memoryadmin.facts.erasure import key_digest
from memoryadmin.privacy.models import DeliveryStatus, WebhookDelivery
from memoryadmin.privacy.recipients import webhook_recipient_add
from tests.factories import FactFactory
from tests.portal.conftest import issue_link, signed_in  # noqa: F401

pytestmark = [pytest.mark.django_db]

S = "FF-RS-0019"
KEY = "seat_preference"
OLD = "Prefers the middle seat"
NEW = "Prefers the aisle seat"
NOTE = "wrong: aisle"


@pytest.fixture
def erasure_recipient(receiver):
    row, secret = webhook_recipient_add(
        name="Warehouse",
        url=receiver.url,
        events=["memory.fact.erased", "memory.subject.erased"],
        actor=Actor.system("test"),
    )
    receiver.secret = secret
    return row


def _check(receiver, types: list[str]) -> None:
    assert [p["type"] for p in receiver.payloads()] == types
    for item in receiver.received:
        assert item.verified, "the receiver's standardwebhooks check failed"
        body = item.body.decode()
        for secret in (KEY, "seat", OLD, NEW, "middle", "aisle", NOTE):
            assert secret not in body
        assert item.payload["data"]["key_hash"] == key_digest(S, KEY)
        assert item.payload["data"]["subject_id"] == S
    assert {d.status for d in WebhookDelivery.objects.all()} == {DeliveryStatus.DELIVERED}


def test_an_erasure_recipient_hears_of_the_stop_and_the_correction(
    erasure_recipient,
    receiver,
    signed_in,  # noqa: F811
    django_capture_on_commit_callbacks,
):
    fact = FactFactory(subject_id=S, key=KEY, value=OLD)
    client = signed_in(S)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("portal:fact-restrict", args=[KEY]), {"note": NOTE})
    _check(receiver, ["memory.restricted"])
    assert receiver.payloads()[0]["data"]["path"] == "traveller"

    # The traveller corrects it: rectified, and the restriction lifts (unrestricted).
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("portal:fact-edit", args=[KEY]), {"value": NEW, "version": fact.version}
        )
    _check(receiver, ["memory.restricted", "memory.rectified", "memory.unrestricted"])


def test_a_recipient_of_corrections_gets_one_event_per_correction(
    recipient,
    receiver,
    signed_in,  # noqa: F811
    django_capture_on_commit_callbacks,
):
    fact = FactFactory(subject_id=S, key=KEY, value=OLD)
    client = signed_in(S)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("portal:fact-edit", args=[KEY]), {"value": NEW, "version": fact.version}
        )
    types = [p["type"] for p in receiver.payloads() if p["type"].startswith("memory.")]
    assert types == ["memory.fact.corrected"]


def test_a_recipient_of_other_events_hears_nothing_of_a_restriction(
    receiver,
    signed_in,  # noqa: F811
    django_capture_on_commit_callbacks,
):
    webhook_recipient_add(
        name="Requests only",
        url=receiver.url,
        events=["privacy_request.completed"],
        actor=Actor.system("test"),
    )
    FactFactory(subject_id=S, key=KEY, value=OLD)
    with django_capture_on_commit_callbacks(execute=True):
        signed_in(S).post(reverse("portal:fact-restrict", args=[KEY]), {"note": ""})
    assert [p["type"] for p in receiver.payloads()] == []
