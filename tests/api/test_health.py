"""GET /healthz: 200 when the database answers (`degraded` when the broker or the cache does not),
503 otherwise."""

from __future__ import annotations

import os

import pytest
from django.test import override_settings

from memoryadmin.facts.models import MemorySettings

pytestmark = pytest.mark.django_db

BROKER_URL = os.environ.get("TEST_BROKER_URL", "redis://127.0.0.1:6379/15")


@override_settings(CELERY_BROKER_URL="")
def test_healthy_without_a_broker_reports_eager(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "database": "ok",
        "broker": "eager",
        "cache": "local",
        "write_filter": "ok",
    }
    assert "no-cache" in response["Cache-Control"]


@override_settings(CELERY_BROKER_URL=BROKER_URL)
def test_healthy_with_a_reachable_broker(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "database": "ok",
        "broker": "ok",
        "cache": "local",
        "write_filter": "ok",
    }


@override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0", API_HEALTH_BROKER_TIMEOUT_SECONDS=1)
def test_unreachable_broker_is_degraded_not_down(client):
    # The agent API still serves from PostgreSQL (turns wait queued): keep it in the balancer.
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {
        "status": "degraded",
        "database": "ok",
        "broker": "error",
        "cache": "local",
        "write_filter": "ok",
    }


def test_healthz_needs_no_token_and_accepts_only_reads(client):
    assert client.get("/healthz").status_code in {200, 503}
    assert client.post("/healthz").status_code == 405


@override_settings(CELERY_BROKER_URL="")
def test_a_stored_invalid_blocked_pattern_is_reported_without_taking_the_service_down(client):
    # Written past the model's validation (as an old row or a raw SQL fix could be).
    MemorySettings.objects.update_or_create(pk=1, defaults={"blocked_patterns": ["(unclosed"]})
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {
        "status": "degraded",
        "database": "ok",
        "broker": "eager",
        "cache": "local",
        "write_filter": "error",
    }
    assert "unclosed" not in response.content.decode()
