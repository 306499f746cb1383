"""The demo's webhook receiver acknowledges only what is signed with its secret, now."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import RequestFactory
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from memoryadmin.staff.demo.receiver import DEMO_WEBHOOK_SECRET, receive

pytestmark = pytest.mark.unit

BODY = b'{"type":"memory.subject.erased","data":{"subject_id":"FF-1"}}'


def _post(secret: str, *, signed_at=None, body: bytes = BODY, method: str = "post"):
    signed_at = signed_at or timezone.now()
    headers = {
        "HTTP_WEBHOOK_ID": "msg_1",
        "HTTP_WEBHOOK_TIMESTAMP": str(int(signed_at.timestamp())),
        "HTTP_WEBHOOK_SIGNATURE": Webhook(secret).sign("msg_1", signed_at, BODY),
    }
    factory = RequestFactory()
    if method == "get":
        request = factory.get("/demo/webhooks/", **headers)
    else:
        request = factory.post("/demo/webhooks/", body, "application/json", **headers)
    return receive(request).status_code


def test_a_delivery_signed_with_the_demo_secret_is_acknowledged():
    assert _post(DEMO_WEBHOOK_SECRET) == 204


def test_a_wrong_secret_a_changed_body_or_an_old_signature_is_refused():
    other = "whsec_" + "b3RoZXItc2VjcmV0LW9mLXRoaXJ0eS10d28tYnl0ZXMh"
    assert _post(other) == 401
    assert _post(DEMO_WEBHOOK_SECRET, body=BODY + b" ") == 401
    assert _post(DEMO_WEBHOOK_SECRET, signed_at=timezone.now() - timedelta(minutes=6)) == 401
    assert _post(DEMO_WEBHOOK_SECRET, method="get") == 405
