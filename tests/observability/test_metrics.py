"""/metrics in one process: who may read it, what the agent's requests and the services count,
the database gauges and the hook other apps register their gauges with."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.test import APIClient

from memoryadmin.api.tokens import token_issue
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactBlocked
from memoryadmin.observability import gauges, metrics
from tests.observability.scrape import value

pytestmark = pytest.mark.django_db
TOKEN = "metrics-token-0123456789"  # noqa: S105 - a test value


@pytest.fixture(autouse=True)
def metrics_settings(settings):
    settings.METRICS_ALLOWED_NETWORKS = ["10.20.0.0/16", "::1"]
    settings.METRICS_TOKEN = TOKEN
    cache.delete(gauges.CACHE_KEY)
    yield settings
    cache.delete(gauges.CACHE_KEY)


@pytest.fixture
def make_agent():
    def make(*scopes: str) -> APIClient:
        _, secret = token_issue(name="obs-host", scopes=list(scopes))
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client

    return make


def scrape(**extra: str) -> str:
    response = Client(REMOTE_ADDR="10.20.3.4").get("/metrics", **extra)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    return response.content.decode()


@pytest.mark.parametrize(
    ("address", "authorization", "status"),
    [
        ("10.20.3.4", "", 200),  # an allowed network
        ("::1", "", 200),  # an allowed address
        ("10.21.0.1", "", 403),  # a wrong address
        ("192.0.2.7", f"Bearer {TOKEN}", 200),  # anywhere, with the token
        ("192.0.2.7", "Bearer wrong-token", 403),  # a wrong token
        ("192.0.2.7", TOKEN, 403),  # the token without the scheme
        ("", "", 403),
    ],
)
def test_only_allowed_networks_or_the_token_read_the_metrics(address, authorization, status):
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    response = Client(REMOTE_ADDR=address).get("/metrics", **headers)
    assert response.status_code == status
    if status == 403:
        assert b"memoryadmin_" not in response.content


def test_nobody_reads_the_metrics_when_nothing_is_configured(settings):
    settings.METRICS_ALLOWED_NETWORKS = []
    settings.METRICS_TOKEN = ""
    assert Client(REMOTE_ADDR="127.0.0.1").get("/metrics").status_code == 403
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 403


def test_a_forwarded_address_is_not_believed():
    response = Client(REMOTE_ADDR="192.0.2.7").get("/metrics", HTTP_X_FORWARDED_FOR="10.20.3.4")
    assert response.status_code == 403


def test_every_operator_metric_is_exported():
    text = scrape()
    for name in (
        "memoryadmin_agent_request_seconds",
        "memoryadmin_facts",
        "memoryadmin_extraction_jobs_total",
        "memoryadmin_extraction_facts_total",
        "memoryadmin_extraction_queue_oldest_seconds",
        "memoryadmin_sweep_lag_seconds",
        "memoryadmin_erasures_total",
        "memoryadmin_write_filter_blocked_total",
        "memoryadmin_privacy_requests_due",
        "memoryadmin_webhook_deliveries_total",
    ):
        assert (
            f"# TYPE {name} " in text or f"# TYPE {name.removesuffix('_total')} counter" in text
        ), name


def test_agent_requests_are_timed_by_operation_and_status(make_agent):
    agent = make_agent("memory:read", "memory:write")
    before = scrape()
    for _ in range(3):
        assert agent.get("/api/v1/subjects/FF-OBS-SUBJECT/tier-one").status_code == 200
    agent.put(
        "/api/v1/subjects/FF-OBS-SUBJECT/facts",
        {"facts": [{"key": "seat_zz", "value": "aisle zz", "category": "preference"}]},
        format="json",
    )
    assert agent.get("/api/v1/subjects/FF-OBS-SUBJECT/facts/no_such_key").status_code == 404
    after = scrape()

    def grew(operation: str, status: str) -> float:
        name = "memoryadmin_agent_request_seconds_count"
        return value(after, name, operation=operation, status=status) - value(
            before, name, operation=operation, status=status
        )

    assert grew("tier_one", "200") == 3
    assert grew("upsert", "200") == 1
    assert grew("get", "404") == 1
    # No label carries the traveller, the key or the value.
    for text in ("FF-OBS-SUBJECT", "seat_zz", "aisle zz"):
        assert text not in after


def test_the_operation_names_cover_every_agent_route():
    assert metrics.operation_for("api-tier-one", "GET") == "tier_one"
    assert metrics.operation_for("api-facts-search", "GET") == "search"
    assert metrics.operation_for("api-fact", "DELETE") == "delete"
    assert metrics.operation_for("api-turns", "POST") == "turn"
    assert metrics.operation_for("api-usage", "GET") == "usage"  # issue 21's endpoint
    assert metrics.operation_for("api-clear", "POST") == "other"
    assert metrics.operation_for(None, "GET") == "other"


def test_a_request_id_is_made_or_kept_and_answered(make_agent):
    agent = make_agent("memory:read")
    made = agent.get("/api/v1/subjects/FF-1/tier-one")["X-Request-ID"]
    assert len(made) == 32
    kept = agent.get("/api/v1/subjects/FF-1/tier-one", HTTP_X_REQUEST_ID="proxy-abc.123")
    assert kept["X-Request-ID"] == "proxy-abc.123"
    forged = agent.get("/api/v1/subjects/FF-1/tier-one", HTTP_X_REQUEST_ID="bad id\nlevel=x")
    assert forged["X-Request-ID"] != "bad id\nlevel=x" and len(forged["X-Request-ID"]) == 32
    assert Client().get("/healthz")["X-Request-ID"]


def test_erasures_and_write_filter_refusals_are_counted(django_capture_on_commit_callbacks):
    agent = Actor.agent("obs-host")
    before = scrape()
    services.fact_upsert(
        subject_id="FF-OBS-2",
        facts=[
            services.FactDraft("meal_x", "vegetarian meal", "preference"),
            services.FactDraft("seat_x", "window seat", "preference"),
        ],
        actor=agent,
    )
    with django_capture_on_commit_callbacks(execute=True):
        services.fact_delete(subject_id="FF-OBS-2", key="meal_x", actor=agent)
    with django_capture_on_commit_callbacks(execute=True):
        services.subject_clear(
            subject_id="FF-OBS-2", actor=Actor.customer("FF-OBS-2"), reason="Traveller asked"
        )
    with pytest.raises(FactBlocked):
        services.fact_upsert(
            subject_id="FF-OBS-2",
            facts=[services.FactDraft("card", "card 4111 1111 1111 1111", "preference")],
            actor=agent,
        )
    after = scrape()

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("memoryadmin_erasures_total", path="agent") == 1
    assert grew("memoryadmin_erasures_total", path="clear") == 1
    assert grew("memoryadmin_write_filter_blocked_total", source="agent") == 1


def test_database_gauges_are_read_at_most_once_per_period(settings):
    services.fact_upsert(
        subject_id="FF-OBS-3",
        facts=[services.FactDraft("seat_y", "aisle seat", "preference")],
        actor=Actor.agent("h"),
    )
    text = scrape()
    assert (
        value(text, "memoryadmin_facts", category="preference", status="active", sensitive="false")
        == 1
    )
    assert value(text, "memoryadmin_sweep_lag_seconds") == 0
    assert value(text, "memoryadmin_extraction_queue_oldest_seconds") == 0

    services.fact_upsert(
        subject_id="FF-OBS-3",
        facts=[services.FactDraft("meal_y", "vegan meal", "preference")],
        actor=Actor.agent("h"),
    )
    # Within the period the reading is the cached one: no new query, the old count.
    assert value(scrape(), "memoryadmin_facts", category="preference") == 1
    cache.delete(gauges.CACHE_KEY)  # the period is over
    assert value(scrape(), "memoryadmin_facts", category="preference") == 2


def test_another_app_registers_a_gauge_source():
    """The hook issue 22 (privacy requests) uses: a source registered by name, read with the
    other gauges; a failing source leaves the rest of the page intact."""
    registered = gauges.registered_gauge_source("memoryadmin_privacy_requests_due")
    gauges.register_gauge_source(
        "memoryadmin_privacy_requests_due", lambda: [(("due_7d",), 4), (("overdue",), 1)]
    )
    try:
        text = scrape()
        assert value(text, "memoryadmin_privacy_requests_due", state="due_7d") == 4
        assert value(text, "memoryadmin_privacy_requests_due", state="overdue") == 1
        cache.delete(gauges.CACHE_KEY)
        gauges.register_gauge_source("memoryadmin_privacy_requests_due", lambda: 1 / 0)
        text = scrape()
        assert value(text, "memoryadmin_privacy_requests_due", state="overdue") == 0
        assert "# TYPE memoryadmin_facts gauge" in text
    finally:
        gauges.unregister_gauge_source("memoryadmin_privacy_requests_due")
        if registered is not None:  # the privacy app's own source, registered at start-up
            gauges.register_gauge_source("memoryadmin_privacy_requests_due", registered)
    with pytest.raises(ValueError, match="unknown gauge"):
        gauges.register_gauge_source("memoryadmin_made_up", lambda: [])


def test_webhook_deliveries_are_counted_through_the_hook():
    before = scrape()
    metrics.count_webhook_delivery("delivered")
    metrics.count_webhook_delivery("gave_up")
    metrics.count_webhook_delivery("https://recipient.example/secret")  # never a label value
    after = scrape()
    name = "memoryadmin_webhook_deliveries_total"
    assert value(after, name, outcome="delivered") - value(before, name, outcome="delivered") == 1
    assert value(after, name, outcome="gave_up") - value(before, name, outcome="gave_up") == 1
    assert value(after, name, outcome="other") - value(before, name, outcome="other") == 1
    assert "recipient.example" not in after
