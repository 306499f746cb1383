"""Changing facts from the dashboard: each action goes through its service, asks a reason,
records the signed-in user, and answers with a redirect and a flash message."""

from __future__ import annotations

import pytest

from memoryadmin.facts import selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent, MemoryFact
from memoryadmin.staff import selectors as staff_selectors
from tests.factories import FactFactory
from tests.support.dbscan import occurrences

pytestmark = pytest.mark.django_db

S = "T-ACT"
BASE = f"/staff/travellers/{S}"


@pytest.fixture
def seat():
    FactFactory(subject_id=S, key="seat", value="Prefers aisle seats")
    return MemoryFact.objects.get(subject_id=S, key="seat")


def _last_event(key: str) -> FactEvent:
    return FactEvent.objects.filter(subject_id=S, key=key).order_by("-id").first()


def test_edit_saves_with_reason_and_actor(client, editor, seat):
    client.force_login(editor)
    response = client.post(
        f"{BASE}/facts/seat/edit/",
        {
            "value": "Prefers window seats",
            "category": "preference",
            "reason": "Phone call",
            "version": seat.version,
        },
        follow=True,
    )
    assert response.redirect_chain[-1][0] == f"{BASE}/#fact-seat"
    assert "Saved Seat." in response.content.decode()
    event = _last_event("seat")
    assert (event.action, event.actor_user, event.reason) == ("updated", editor, "Phone call")
    assert selectors.subject_fact(S, "seat").value == "Prefers window seats"


def test_edit_without_reason_is_a_400_with_a_field_message(client, editor, seat):
    client.force_login(editor)
    response = client.post(
        f"{BASE}/facts/seat/edit/",
        {"value": "Window", "category": "preference", "reason": "", "version": seat.version},
    )
    assert response.status_code == 400
    assert "Give a reason" in response.content.decode()
    assert selectors.subject_fact(S, "seat").value == "Prefers aisle seats"


def test_a_stale_edit_is_refused_and_both_versions_are_shown(client, editor, seat):
    services.fact_upsert(
        subject_id=S, facts=[services.FactDraft("seat", "Exit row please")], actor=Actor.agent("h")
    )
    client.force_login(editor)
    response = client.post(
        f"{BASE}/facts/seat/edit/",
        {"value": "Window seats", "category": "preference", "reason": "Call", "version": 1},
    )
    body = response.content.decode()
    assert response.status_code == 409
    assert "Your version" in body and "Window seats" in body
    assert "Current version" in body and "Exit row please" in body
    assert selectors.subject_fact(S, "seat").value == "Exit row please"
    # Choosing "save mine" is a second, deliberate submit at the current version.
    client.post(
        f"{BASE}/facts/seat/edit/",
        {"value": "Window seats", "category": "preference", "reason": "Call", "version": 2},
    )
    assert selectors.subject_fact(S, "seat").value == "Window seats"


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        ("card 4111 1111 1111 1111", "4111 1111"),
        # Typed on a Chinese keyboard: the same phone number in full-width digits (issue 20).
        ("call ０９１２－３４５－６７８", "３４５"),
    ],
)
def test_a_blocked_value_is_a_form_error_that_does_not_repeat_it(
    client, editor, seat, value, secret
):
    client.force_login(editor)
    response = client.post(
        f"{BASE}/facts/seat/edit/",
        {"value": value, "category": "preference", "reason": "x", "version": seat.version},
    )
    assert response.status_code == 400
    assert secret not in response.content.decode().split("<textarea")[0]
    assert selectors.subject_fact(S, "seat").value == "Prefers aisle seats"


def test_expire_hides_the_fact_from_the_agent(client, editor, seat):
    client.force_login(editor)
    response = client.post(f"{BASE}/facts/seat/expire/", {"reason": "Outdated", "version": 1})
    assert response.status_code == 302
    assert selectors.facts_for_agent(S) == []
    assert _last_event("seat").action == "expired"


def test_flag_then_reveal_records_an_access_event(client, editor, seat):
    client.force_login(editor)
    client.post(f"{BASE}/facts/seat/flag/", {"reason": "Health related", "version": 1})
    assert "Prefers aisle seats" not in client.get(f"{BASE}/").content.decode()
    response = client.post(f"{BASE}/facts/seat/reveal/", {"reason": "Customer asked"})
    assert response.status_code == 302
    assert "Prefers aisle seats" in client.get(f"{BASE}/").content.decode()
    event = _last_event("seat")
    assert (event.action, event.actor_user, event.reason) == (
        "value_revealed",
        editor,
        "Customer asked",
    )
    assert event.before is None and event.after is None


def test_reveal_needs_a_reason(client, editor, seat):
    services.fact_flag_sensitive(subject_id=S, key="seat", actor=Actor.system("t"))
    client.force_login(editor)
    assert client.post(f"{BASE}/facts/seat/reveal/", {"reason": ""}).status_code == 400
    assert not FactEvent.objects.filter(action="value_revealed").exists()


def test_set_and_clear_an_expiry(client, editor, seat):
    client.force_login(editor)
    client.post(
        f"{BASE}/facts/seat/expiry/",
        {"expires_on": "2031-01-02", "reason": "Trip ends", "version": 1},
    )
    fact = selectors.subject_fact(S, "seat")
    assert fact.expires_at.date().isoformat() == "2031-01-02" and fact.expiry_pinned
    client.post(
        f"{BASE}/facts/seat/expiry/", {"expires_on": "", "reason": "Back to rules", "version": 2}
    )
    assert not selectors.subject_fact(S, "seat").expiry_pinned


def test_add_a_fact_and_refuse_a_duplicate_key(client, editor, seat):
    client.force_login(editor)
    response = client.post(
        f"{BASE}/add-fact/",
        {
            "key": "Meal Preference",
            "value": "Vegetarian",
            "category": "preference",
            "reason": "Told us by phone",
        },
    )
    assert response.status_code == 302
    fact = selectors.subject_fact(S, "meal_preference")
    assert fact.origin == "staff" and fact.status == "active"
    response = client.post(
        f"{BASE}/add-fact/",
        {"key": "seat", "value": "x", "category": "preference", "reason": "r"},
    )
    assert response.status_code == 400 and "already has a fact" in response.content.decode()


def test_review_queue_approves_and_rejects_oldest_first(client, editor):
    FactFactory(subject_id=S, key="mobility", value="Uses a wheelchair", actor=Actor.agent("h"))
    FactFactory(subject_id="T-ACT2", key="health", value="Asthma", actor=Actor.agent("h"))
    client.force_login(editor)
    body = client.get("/staff/review/").content.decode()
    assert body.index("T-ACT/") < body.index("T-ACT2/")
    first, second = staff_selectors.staff_review_queue()
    for subject_id, key in ((S, "mobility"), ("T-ACT2", "health")):  # sensitive: seen first
        client.post(f"/staff/travellers/{subject_id}/facts/{key}/reveal/", {"reason": "review"})
    response = client.post(
        f"{BASE}/facts/mobility/review/",
        {
            f"f{first.pk}-decision": "approve",
            f"f{first.pk}-reason": "Needed for boarding",
            f"f{first.pk}-version": first.version,
        },
    )
    assert response.status_code == 302 and response["Location"] == "/staff/review/"
    assert selectors.subject_fact(S, "mobility").status == "active"
    client.post(
        "/staff/travellers/T-ACT2/facts/health/review/",
        {
            f"f{second.pk}-decision": "reject",
            f"f{second.pk}-reason": "Not needed",
            f"f{second.pk}-version": second.version,
            "confirmed": "yes",
        },
    )
    assert selectors.subject_fact("T-ACT2", "health") is None
    assert "Nothing is waiting for review" in client.get("/staff/review/").content.decode()


def test_review_without_reason_is_a_400(client, editor):
    FactFactory(subject_id=S, key="mobility", value="Uses a wheelchair", actor=Actor.agent("h"))
    fact = staff_selectors.staff_review_queue().get()
    client.force_login(editor)
    response = client.post(
        f"{BASE}/facts/mobility/review/",
        {
            f"f{fact.pk}-decision": "approve",
            f"f{fact.pk}-reason": "",
            f"f{fact.pk}-version": fact.version,
        },
    )
    assert response.status_code == 400
    assert selectors.subject_fact(S, "mobility").status == "pending_review"


def test_bulk_delete_asks_to_confirm_then_erases_all(client, editor, seat):
    FactFactory(subject_id=S, key="meal", value="Vegetarian")
    FactFactory(subject_id=S, key="home", value="TPE")
    client.force_login(editor)
    data = {"keys": ["seat", "meal"], "action": "delete", "reason": "Customer request"}
    response = client.post(f"{BASE}/bulk/", data)
    assert response.status_code == 200 and "Delete 2 facts for good?" in response.content.decode()
    assert MemoryFact.objects.filter(subject_id=S).count() == 3
    response = client.post(f"{BASE}/bulk/", {**data, "confirmed": "True"}, follow=True)
    assert "Delete: 2 facts." in response.content.decode()
    assert list(MemoryFact.objects.filter(subject_id=S).values_list("key", flat=True)) == ["home"]
    assert FactEvent.objects.filter(subject_id=S, action="deleted").count() == 2


def test_bulk_without_reason_changes_nothing(client, editor, seat):
    client.force_login(editor)
    response = client.post(
        f"{BASE}/bulk/", {"keys": ["seat"], "action": "expire", "confirmed": "True"}
    )
    assert response.status_code == 400
    assert selectors.subject_fact(S, "seat").expires_at is None


def test_an_erased_key_is_not_left_in_the_staff_session(client, editor):
    """The session remembers what it revealed by keyed hash: after the erasure the topic is in
    no table, django_session included (issue 19)."""
    services.fact_upsert(
        subject_id=S,
        facts=[services.FactDraft("wheelchair_zqx", "Uses a wheelchair", "preference")],
        actor=Actor.system("t"),
    )
    services.fact_flag_sensitive(subject_id=S, key="wheelchair_zqx", actor=Actor.system("t"))
    client.force_login(editor)
    client.post(f"{BASE}/facts/wheelchair_zqx/reveal/", {"reason": "Customer asked"})
    assert "Uses a wheelchair" in client.get(f"{BASE}/").content.decode()  # still revealed
    fact = MemoryFact.objects.get(subject_id=S, key="wheelchair_zqx")
    response = client.post(
        f"{BASE}/facts/wheelchair_zqx/delete/",
        {"reason": "Asked to forget", "version": fact.version},
    )
    assert response.status_code == 302
    assert occurrences("wheelchair_zqx") == {}
    from django.contrib.sessions.models import Session

    sessions = [str(session.get_decoded()) for session in Session.objects.all()]
    assert sessions and "revealed" in sessions[0]  # session data is encoded: read it decoded
    assert not any("wheelchair_zqx" in session for session in sessions)
