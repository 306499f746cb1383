"""What the operators' metrics see of privacy requests and webhooks (issues 22 and 25 joined):
the privacy app's own gauge source, and one count per delivery attempt by its outcome."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.test import Client

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.observability import gauges
from memoryadmin.privacy import clock, webhooks
from memoryadmin.privacy import services as privacy
from memoryadmin.privacy.outbox import outbox_dispatch
from tests.factories import FactFactory, UserFactory
from tests.observability.scrape import value

pytestmark = pytest.mark.django_db
DELIVERIES = "memoryadmin_webhook_deliveries_total"


@pytest.fixture(autouse=True)
def metrics_settings(settings):
    settings.METRICS_ALLOWED_NETWORKS = ["10.20.0.0/16"]
    cache.delete(gauges.CACHE_KEY)
    yield settings
    cache.delete(gauges.CACHE_KEY)


def _scrape() -> str:
    response = Client(REMOTE_ADDR="10.20.3.4").get("/metrics")
    assert response.status_code == 200
    return response.content.decode()


def test_requests_due_and_overdue_reach_the_gauge():
    editor = Actor.staff(UserFactory(username="eddie"))
    today = clock.today()
    # overdue, due within 7 days, due in a month: three travellers (one traveller's second
    # request of a kind would be a duplicate, with no clock of its own)
    for days_ago in (40, 27, 0):
        privacy.privacy_request_record(
            subject_id=f"FF-MET-1-{days_ago}",
            kind="access",
            channel="phone",
            received_on=today - timedelta(days=days_ago),
            actor=editor,
            note="called in",
        )
    text = _scrape()
    assert value(text, "memoryadmin_privacy_requests_due", state="overdue") == 1
    assert value(text, "memoryadmin_privacy_requests_due", state="due_7d") == 1


def test_each_delivery_attempt_is_counted_by_its_outcome(
    recipient, receiver, django_capture_on_commit_callbacks
):
    receiver.statuses = [500, 200]
    FactFactory(subject_id="FF-MET-2", key="meal", value="Vegetarian", category="preference")
    before = _scrape()
    # The erasure's own after-commit dispatch never runs inside the test's transaction: the
    # test dispatches and attempts by hand, and runs the counting callbacks as a commit would.
    services.fact_delete(subject_id="FF-MET-2", key="meal", actor=Actor.system("t"))
    [delivery_id] = outbox_dispatch()
    with django_capture_on_commit_callbacks(execute=True):
        first = webhooks.delivery_attempt(delivery_id=delivery_id)
        second = webhooks.delivery_attempt(delivery_id=delivery_id)
    assert (first.delivered_at, second.delivered_at is not None) == (None, True)
    after = _scrape()
    assert (
        value(after, DELIVERIES, outcome="failed") - value(before, DELIVERIES, outcome="failed")
        == 1
    )
    assert (
        value(after, DELIVERIES, outcome="delivered")
        - value(before, DELIVERIES, outcome="delivered")
        == 1
    )
