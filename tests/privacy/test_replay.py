"""A privacy admin replays a delivery from its page: a new attempt, marked as a replay, in the
delivery log, the real receiver gets the same event (same webhook-id) again and verifies it, the
replay is in the policy history. Editors and viewers cannot replay; a removed recipient is not
sent anything."""

from __future__ import annotations

import pytest

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import PolicyEvent
from memoryadmin.privacy.models import DeliveryAttempt, DeliveryStatus, WebhookDelivery
from memoryadmin.privacy.recipients import webhook_recipient_remove
from tests.factories import FactFactory
from tests.staff.conftest import editor, privacy_admin, viewer  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def delivered(recipient, receiver, django_capture_on_commit_callbacks) -> WebhookDelivery:
    FactFactory(subject_id="FF-970001", key="seat", value="Prefers the window")
    with django_capture_on_commit_callbacks(execute=True):
        services.fact_delete(subject_id="FF-970001", key="seat", actor=Actor.system("t"))
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == DeliveryStatus.DELIVERED and len(receiver.received) == 1
    return delivery


def test_editors_and_viewers_cannot_replay(client, editor, viewer, delivered, receiver):  # noqa: F811
    url = f"/staff/privacy/webhooks/deliveries/{delivered.pk}/"
    for user in (editor, viewer):
        client.force_login(user)
        assert client.get(url).status_code == 403
        assert client.post(url).status_code == 403
    assert len(receiver.received) == 1
    assert DeliveryAttempt.objects.count() == 1


def test_a_privacy_admin_replays_a_delivery(client, privacy_admin, delivered, receiver):  # noqa: F811
    url = f"/staff/privacy/webhooks/deliveries/{delivered.pk}/"
    client.force_login(privacy_admin)
    response = client.post(url, follow=True)
    assert "Replayed: CRM answered 200." in response.content.decode()

    first, again = receiver.received
    assert again.verified
    assert again.headers["webhook-id"] == first.headers["webhook-id"] == delivered.event.msg_id
    assert again.payload == first.payload
    attempts = list(DeliveryAttempt.objects.order_by("id").values_list("replay", "status_code"))
    assert attempts == [(False, 200), (True, 200)]
    delivered.refresh_from_db()
    assert (delivered.status, delivered.attempts) == (DeliveryStatus.DELIVERED, 2)
    assert (
        PolicyEvent.objects.filter(
            action="webhook_replayed", target="CRM", actor_user=privacy_admin
        ).count()
        == 1
    )
    page = client.get(url).content.decode()
    assert page.count("(acknowledged)") == 2 and "<td>Yes</td>" in page

    receiver.statuses = [503]  # a replay that fails leaves the delivery acknowledged
    response = client.post(url, follow=True)
    assert "did not acknowledge (answered 503)" in response.content.decode()
    delivered.refresh_from_db()
    assert delivered.status == DeliveryStatus.DELIVERED
    assert DeliveryAttempt.objects.filter(replay=True).count() == 2


def test_a_removed_recipient_is_not_replayed_to(client, privacy_admin, delivered, receiver):  # noqa: F811
    webhook_recipient_remove(
        recipient_id=delivered.recipient_id, actor=Actor.system("t"), reason="contract ended"
    )
    client.force_login(privacy_admin)
    response = client.post(f"/staff/privacy/webhooks/deliveries/{delivered.pk}/", follow=True)
    assert "Not replayed: CRM was removed." in response.content.decode()
    assert len(receiver.received) == 1 and DeliveryAttempt.objects.count() == 1
