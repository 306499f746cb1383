"""POST /api/v1/subjects/{id}/portal-links: a single-use link for a signed-in traveller."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.test import Client
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memoryadmin.api.models import IdempotencyRecord, Scope
from memoryadmin.portal.models import PortalLink
from tests.support.dbscan import occurrences

from .conftest import subject_url

pytestmark = pytest.mark.django_db
PORTAL = Scope.PORTAL_ISSUE.value


def test_the_airline_gets_a_url_that_opens_the_portal_once(make_agent):
    agent = make_agent(PORTAL)

    response = agent.post(subject_url("FF-100231", "portal-links"))

    assert response.status_code == 201
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    assert set(body) == {"url", "expires_at"}
    expires = parse_datetime(body["expires_at"])
    assert (
        timezone.now() + timedelta(minutes=14) < expires <= timezone.now() + timedelta(minutes=15)
    )
    url = urlsplit(body["url"])
    assert (url.scheme, url.netloc) == ("http", "testserver")
    assert url.path.startswith("/portal/open/")
    assert "FF-100231" not in body["url"]
    browser = Client()
    assert browser.get(url.path).status_code == 200  # a page with one button: nothing spent
    assert browser.post(url.path).status_code == 302
    assert browser.get("/portal/").status_code == 200
    assert Client().get(url.path, follow=True).status_code == 410
    secret = url.path.rsplit("/", 1)[1]
    assert occurrences(secret) == {}  # only its hash is kept


def test_the_public_base_url_is_used_when_set(make_agent, settings):
    settings.PORTAL_BASE_URL = "https://memory.airline.example"
    response = make_agent(PORTAL).post(subject_url("FF-1", "portal-links"))
    assert response.json()["url"].startswith("https://memory.airline.example/portal/open/")


def test_each_call_issues_a_new_link_and_no_reply_is_stored(make_agent):
    agent = make_agent(PORTAL)
    first = agent.post(subject_url("FF-1", "portal-links"), HTTP_IDEMPOTENCY_KEY="k-1")
    second = agent.post(subject_url("FF-1", "portal-links"), HTTP_IDEMPOTENCY_KEY="k-1")

    assert first.json()["url"] != second.json()["url"]
    assert IdempotencyRecord.objects.count() == 0
    assert PortalLink.objects.count() == 2


@pytest.mark.parametrize(
    "scopes", [(Scope.MEMORY_READ.value, Scope.MEMORY_WRITE.value), (Scope.TURNS_WRITE.value,)]
)
def test_other_scopes_are_refused_and_issue_nothing(make_agent, scopes):
    response = make_agent(*scopes).post(subject_url("FF-1", "portal-links"))

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_scope"
    assert PortalLink.objects.count() == 0


def test_no_token_is_401(client):
    response = client.post(subject_url("FF-1", "portal-links"))
    assert response.status_code == 401
    assert PortalLink.objects.count() == 0


def test_a_bad_subject_id_is_400(make_agent):
    response = make_agent(PORTAL).post(subject_url("has space", "portal-links"))
    assert response.status_code == 400
    assert "subject_id" in response.json()["error"]["fields"]


def test_a_time_zone_passed_by_the_issuer_is_accepted_and_not_used(make_agent):
    """The portal shows the airline's one zone; a client that still passes one is not broken."""
    agent = make_agent(PORTAL)

    response = agent.post(
        subject_url("FF-1", "portal-links"),
        {"time_zone": "Europe/London"},
        content_type="application/json",
    )

    assert response.status_code == 201
    assert PortalLink.objects.count() == 1


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../../etc/passwd", "x" * 65, "UTC\x00"])
def test_a_time_zone_that_is_not_one_is_a_400_naming_the_field(make_agent, zone):
    response = make_agent(PORTAL).post(
        subject_url("FF-1", "portal-links"), {"time_zone": zone}, content_type="application/json"
    )

    assert response.status_code == 400
    assert "time_zone" in response.json()["error"]["fields"]
    assert PortalLink.objects.count() == 0


def test_the_api_answers_in_utc_whatever_the_airlines_zone(make_agent, settings):
    """People read the airline's one zone; programs read UTC, as they always have."""
    settings.TIME_ZONE = "Asia/Taipei"
    response = make_agent(PORTAL).post(subject_url("FF-1", "portal-links"))
    assert response.status_code == 201
    assert response.json()["expires_at"].endswith("Z")
