"""GET /healthz: 200 when the database (and a configured broker) answer, 503 otherwise."""

from __future__ import annotations

import os

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db

BROKER_URL = os.environ.get("TEST_BROKER_URL", "redis://127.0.0.1:6379/15")


@override_settings(CELERY_BROKER_URL="")
def test_healthy_without_a_broker_reports_eager(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"database": "ok", "broker": "eager"}
    assert "no-cache" in response["Cache-Control"]


@override_settings(CELERY_BROKER_URL=BROKER_URL)
def test_healthy_with_a_reachable_broker(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"database": "ok", "broker": "ok"}


@override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0", API_HEALTH_BROKER_TIMEOUT_SECONDS=1)
def test_unreachable_broker_is_503(client):
    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json() == {"database": "ok", "broker": "error"}


def test_healthz_needs_no_token_and_accepts_only_reads(client):
    assert client.get("/healthz").status_code in {200, 503}
    assert client.post("/healthz").status_code == 405
