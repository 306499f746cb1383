"""The staff pages of privacy requests and webhook recipients through Django's test client:
who may do what, bad input answered 400 with a field message and nothing written, the CSV,
a fixed number of queries."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest

from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import PolicyEvent
from memoryadmin.privacy import clock
from memoryadmin.privacy.models import PrivacyRequest, RequestStatus, WebhookRecipient
from memoryadmin.privacy.services import privacy_request_record
from tests.staff.conftest import editor, no_role, privacy_admin, viewer  # noqa: F401

pytestmark = pytest.mark.django_db


def _request(days_ago: int = 0, kind: str = "access") -> PrivacyRequest:
    return privacy_request_record(
        subject_id="FF-930001",
        kind=kind,
        channel="phone",
        received_on=clock.today() - timedelta(days=days_ago),
        actor=Actor.system("test"),
        note='=HYPERLINK("x")',
    )


def test_roles(client, viewer, editor, privacy_admin, no_role):  # noqa: F811
    req = _request()
    detail = f"/staff/privacy/requests/{req.number}/"
    client.force_login(no_role)
    assert client.get("/staff/privacy/").status_code == 403
    client.force_login(viewer)
    assert client.get("/staff/privacy/").status_code == 200
    assert client.get(detail).status_code == 200
    assert client.get("/staff/privacy/record/").status_code == 403
    assert client.post(detail + "complete/", {"note": "x"}).status_code == 403
    client.force_login(editor)
    assert client.get("/staff/privacy/record/").status_code == 200
    assert client.get(detail + "refuse/").status_code == 403
    assert client.get(detail + "extend/").status_code == 403
    assert client.get("/staff/privacy/webhooks/").status_code == 403
    client.force_login(privacy_admin)
    assert client.get(detail + "refuse/").status_code == 200
    assert client.get("/staff/privacy/webhooks/").status_code == 200


def test_recording_checks_its_input(client, editor):  # noqa: F811
    client.force_login(editor)
    future = clock.today() + timedelta(days=2)
    response = client.post(
        "/staff/privacy/record/",
        {
            "subject_id": "",
            "kind": "nonsense",
            "channel": "phone",
            "received_on": future,
        },
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert "There is a problem" in body and "This field is required" in body
    assert PrivacyRequest.objects.count() == 0
    response = client.post(
        "/staff/privacy/record/",
        {
            "subject_id": "FF-930002",
            "kind": "access",
            "channel": "phone",
            "received_on": future,
            "identity_check": "airline_account",
        },
    )
    assert response.status_code == 400
    assert "cannot be in the future" in response.content.decode()
    assert PrivacyRequest.objects.count() == 0


def test_refusing_without_a_ground_is_a_form_error_and_writes_nothing(client, privacy_admin):  # noqa: F811
    req = _request()
    client.force_login(privacy_admin)
    before = PolicyEvent.objects.count()
    response = client.post(f"/staff/privacy/requests/{req.number}/refuse/", {"ground": "  "})
    assert response.status_code == 400
    assert "Give the legal ground" in response.content.decode()
    req.refresh_from_db()
    assert req.status == RequestStatus.OPEN and PolicyEvent.objects.count() == before


def test_csv_for_auditors_neutralises_formulas(client, viewer):  # noqa: F811
    _request(days_ago=3)
    client.force_login(viewer)
    today = clock.today()
    response = client.get(
        "/staff/privacy/requests.csv", {"start": today - timedelta(days=10), "end": today}
    )
    assert response.status_code == 200
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][0] == "number" and len(rows) == 2
    assert rows[1][1] == "FF-930001" and rows[1][2] == "access"
    bad = client.get("/staff/privacy/requests.csv", {"start": "yesterday"})
    assert bad.status_code == 400


def test_list_and_overview_use_a_fixed_number_of_queries(
    client,
    viewer,  # noqa: F811
    django_assert_max_num_queries,  # noqa: F811
):
    for n in range(30):
        _request(days_ago=n * 2)
    client.force_login(viewer)
    client.get("/staff/privacy/")
    with django_assert_max_num_queries(12):
        body = client.get("/staff/privacy/").content.decode()
    assert "Overdue" in body
    with django_assert_max_num_queries(14):
        overview = client.get("/staff/").content.decode()
    assert "privacy requests overdue" in overview


def test_registering_a_recipient_shows_the_secret_once(client, privacy_admin, settings):  # noqa: F811
    client.force_login(privacy_admin)
    response = client.post(
        "/staff/privacy/webhooks/",
        {
            "name": "CRM",
            "url": "http://crm.example/hook",
            "events": ["memory.fact.erased"],
            "reason": "DPA-7",
        },
    )
    assert response.status_code == 400 and "https://" in response.content.decode()
    response = client.post(
        "/staff/privacy/webhooks/",
        {
            "name": "CRM",
            "url": "https://crm.example/hook",
            "events": ["memory.fact.erased"],
            "reason": "DPA-7",
        },
        follow=True,
    )
    body = response.content.decode()
    assert "whsec_" in body
    again = client.get(response.redirect_chain[-1][0]).content.decode()
    assert "whsec_" not in again
    row = WebhookRecipient.objects.get()
    assert "whsec_" not in row.secret_encrypted
    assert PolicyEvent.objects.filter(action="webhook_recipient", target="CRM").exists()
