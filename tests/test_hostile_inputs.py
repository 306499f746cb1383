"""Hostile paths and inputs that used to answer 500 (issue 19): a NUL byte in a path segment or a
bulk key, a 10,000-character username, a fact erased by someone else while an editor acts on
it, and two editors adding the same key."""

from __future__ import annotations

import pytest
from django.test import Client

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import ActorKind, MemoryFact
from memoryadmin.portal.services import portal_link_issue
from memoryadmin.staff.roles import EDITOR, PRIVACY_ADMIN
from tests.factories import FactFactory
from tests.staff.conftest import make_staff

pytestmark = pytest.mark.django_db

SOMEONE = Actor.system("another editor")


@pytest.fixture
def editor_client(client: Client) -> Client:
    client.force_login(make_staff("ed.hostile", EDITOR))
    return client


@pytest.mark.parametrize(
    "path",
    [
        "/staff/travellers/%00/",
        "/staff/travellers/FF-1/facts/%00/",
        "/staff/travellers/FF-1/facts/seat%00x/edit/",
    ],
)
def test_a_nul_byte_in_a_staff_path_is_a_404(editor_client, path):
    FactFactory(subject_id="FF-1", key="seat")
    response = editor_client.get(path)
    assert response.status_code == 404


def test_a_nul_byte_in_a_settings_path_is_a_404(client):
    client.force_login(make_staff("pat.hostile", PRIVACY_ADMIN))
    assert client.get("/staff/settings/legal-hold/%00/").status_code == 404


@pytest.mark.parametrize("path", ["/portal/receipts/%00", "/portal/facts/%00/change"])
def test_a_nul_byte_in_a_portal_path_is_a_404(path):
    traveller = Client()
    secret = portal_link_issue(subject_id="FF-2", issued_by="test").secret
    assert traveller.post(f"/portal/open/{secret}").status_code == 302
    assert traveller.get(path).status_code == 404


def test_a_bulk_post_with_a_nul_key_is_a_400_and_changes_nothing(editor_client):
    FactFactory(subject_id="FF-3", key="seat")
    response = editor_client.post(
        "/staff/travellers/FF-3/bulk/",
        {
            "keys": ["\x00"],
            "action": "delete",
            "reason": "cleanup",
            "confirmed": "1",
        },
    )
    assert response.status_code == 400
    assert MemoryFact.objects.filter(subject_id="FF-3").count() == 1


def test_a_10000_character_username_gets_a_form_error(client):
    response = client.post(
        "/login/", {"username": "u" * 10_000, "password": "whatever-123"}, REMOTE_ADDR="203.0.113.9"
    )
    assert response.status_code == 200
    assert "Username: Ensure this value has at most 150 characters" in response.content.decode()


def _erased_meanwhile(subject_id: str, key: str):
    services.fact_delete(subject_id=subject_id, key=key, actor=SOMEONE, reason="gone")


@pytest.fixture
def erased_after_the_lookup(monkeypatch):
    """The race: the view finds the fact, then someone else erases it before the service runs."""
    from memoryadmin.facts import selectors

    real = selectors.subject_fact

    def lookup_then_erase(subject_id, key):
        found = real(subject_id, key)
        if found is not None:
            _erased_meanwhile(subject_id, key)
        return found

    monkeypatch.setattr(selectors, "subject_fact", lookup_then_erase)


@pytest.mark.parametrize(
    ("action", "data"),
    [
        ("flag", {"reason": "health"}),
        ("unflag", {"reason": "not health"}),
        ("expire", {"reason": "old"}),
    ],
)
def test_an_action_on_a_fact_erased_meanwhile_says_so_instead_of_500(
    editor_client, erased_after_the_lookup, action, data
):
    fact = FactFactory(subject_id="FF-4", key="seat")
    response = editor_client.post(
        f"/staff/travellers/FF-4/facts/seat/{action}/", {**data, "version": fact.version}
    )
    assert response.status_code in (404, 409)
    assert b"Nothing was changed" in response.content


def test_an_expiry_change_on_a_fact_erased_meanwhile_is_a_404(
    editor_client, erased_after_the_lookup
):
    fact = FactFactory(subject_id="FF-5", key="seat")
    response = editor_client.post(
        "/staff/travellers/FF-5/facts/seat/expiry/",
        {
            "expires_on": "2031-01-01",
            "reason": "trip",
            "version": fact.version,
        },
    )
    assert response.status_code == 404 and b"Nothing was changed" in response.content


def test_a_review_decision_on_a_fact_erased_meanwhile_is_not_a_500(
    editor_client, erased_after_the_lookup
):
    services.fact_upsert(
        subject_id="FF-6",
        facts=[services.FactDraft("meal", "Needs insulin with meals", "preference")],
        actor=Actor(ActorKind.EXTRACTION, "extraction"),
        reason="learned",
    )
    fact = MemoryFact.objects.get(subject_id="FF-6", key="meal")
    assert fact.status == "pending_review"
    response = editor_client.post(
        "/staff/travellers/FF-6/facts/meal/review/",
        {
            f"f{fact.pk}-decision": "approve",
            f"f{fact.pk}-reason": "ok",
            f"f{fact.pk}-version": fact.version,
        },
    )
    assert response.status_code == 404 and b"Nothing was changed" in response.content


def test_a_concurrent_add_of_the_same_key_gets_the_conflict_page(editor_client, monkeypatch):
    """The view checks, then writes: another add landing between the two used to be silently
    overwritten. The write itself now refuses a key already held, under the traveller's lock."""
    from memoryadmin.facts import selectors

    real = selectors.subject_fact

    def check_then_someone_adds(subject_id, key):
        found = real(subject_id, key)
        services.fact_upsert(
            subject_id=subject_id,
            facts=[
                services.FactDraft(key, "Window seats, added by the other editor", "preference")
            ],
            actor=SOMEONE,
            reason="added elsewhere",
        )
        return found

    FactFactory(subject_id="FF-7", key="other")
    monkeypatch.setattr(
        "memoryadmin.staff.views.edits.fact_selectors.subject_fact", check_then_someone_adds
    )
    response = editor_client.post(
        "/staff/travellers/FF-7/add-fact/",
        {
            "key": "seat",
            "value": "Aisle seats",
            "category": "preference",
            "reason": "call",
        },
    )
    monkeypatch.setattr("memoryadmin.staff.views.edits.fact_selectors.subject_fact", real)
    assert response.status_code == 409
    assert b"was changed while you were editing" in response.content
    assert MemoryFact.objects.get(subject_id="FF-7", key="seat").value == (
        "Window seats, added by the other editor"
    )
