"""Review that cannot go wrong, staff facts through the classifier, and deletions that support
can explain (issue 23)."""

from __future__ import annotations

import pytest

from memoryadmin.facts import selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactStateError
from memoryadmin.facts.models import EventAction, FactEvent, MemoryFact
from memoryadmin.staff import selectors as staff_selectors
from tests.factories import FactFactory
from tests.support.dbscan import occurrences

pytestmark = pytest.mark.django_db

S = "T-REV"
BASE = f"/staff/travellers/{S}"
PREGNANCY = "Twenty weeks pregnant, needs an aisle seat"


@pytest.fixture
def held():
    FactFactory(subject_id=S, key="pregnancy_note", value=PREGNANCY, actor=Actor.agent("h"))
    fact = staff_selectors.staff_review_queue().get()
    assert fact.sensitive and fact.status == "pending_review"
    return fact


def _decide(client, fact, decision: str, reason: str, **extra):
    data = {
        f"f{fact.pk}-decision": decision,
        f"f{fact.pk}-reason": reason,
        f"f{fact.pk}-version": fact.version,
        **extra,
    }
    return client.post(f"{BASE}/facts/{fact.key}/review/", data)


def _reveal(client, fact, reason: str = "Deciding on the review"):
    return client.post(
        f"{BASE}/facts/{fact.key}/reveal/", {"reason": reason, "next": "/staff/review/"}
    )


def test_loading_the_queue_masks_sensitive_values_and_writes_no_access_row(
    client, editor, viewer, held
):
    from memoryadmin.access.models import StaffAccess

    for user in (editor, viewer):
        client.force_login(user)
        body = client.get("/staff/review/").content.decode()
        assert PREGNANCY not in body and "••••••" in body
    assert StaffAccess.objects.count() == 0
    assert not FactEvent.objects.filter(action=EventAction.VALUE_REVEALED).exists()


def test_one_reveal_with_one_reason_writes_one_access_row_and_shows_the_value(client, editor, held):
    from memoryadmin.access.models import StaffAccess

    client.force_login(editor)
    response = _reveal(client, held, "Checking the seat request")
    assert response.status_code == 302 and response["Location"] == "/staff/review/"
    assert list(StaffAccess.objects.values_list("what", "subject_id", "staff_username")) == [
        ("reveal", S, editor.get_username())
    ]
    assert PREGNANCY in client.get("/staff/review/").content.decode()
    assert StaffAccess.objects.count() == 1  # showing it again is the same look
    [event] = FactEvent.objects.filter(action=EventAction.VALUE_REVEALED)
    assert event.reason == "Checking the seat request" and event.actor_user == editor


def test_approving_a_sensitive_fact_before_revealing_it_is_refused(client, editor, held):
    with pytest.raises(FactStateError) as refused:
        services.fact_review_decide(
            subject_id=S,
            key="pregnancy_note",
            decision="approve",
            actor=Actor.staff(editor),
            reason="Looks fine",
            expected_version=held.version,
        )
    assert "Reveal the value before you decide" in refused.value.message
    assert selectors.subject_fact(S, "pregnancy_note").status == "pending_review"

    # Through the page: refused with the message, nothing decided.
    client.force_login(editor)
    response = _decide(client, held, "approve", "Looks fine")
    assert response.status_code == 302
    assert "Reveal the value before you decide" in client.get("/staff/review/").content.decode()
    assert selectors.subject_fact(S, "pregnancy_note").status == "pending_review"


def test_someone_elses_reveal_does_not_let_you_decide(client, editor, held):
    from tests.factories import UserFactory

    other = UserFactory(username="other-editor")
    services.fact_reveal(
        subject_id=S, key="pregnancy_note", actor=Actor.staff(other), reason="Looked"
    )
    with pytest.raises(FactStateError):
        services.fact_review_decide(
            subject_id=S,
            key="pregnancy_note",
            decision="approve",
            actor=Actor.staff(editor),
            reason="Looks fine",
        )


def test_approving_after_the_reveal_records_the_look_and_the_decision(client, editor, held):
    client.force_login(editor)
    _reveal(client, held, "Seat request confirmed by phone")

    response = _decide(client, held, "approve", "Seat request confirmed by phone")

    assert response.status_code == 302
    events = list(FactEvent.objects.filter(subject_id=S, key="pregnancy_note").order_by("id"))
    assert [e.action for e in events] == [
        EventAction.CREATED,
        EventAction.VALUE_REVEALED,
        EventAction.APPROVED,
    ]
    assert all(e.actor_user == editor for e in events[1:])
    assert events[1].before is None and events[1].after is None  # the access event: no value
    assert selectors.subject_fact(S, "pregnancy_note").status == "active"


def test_reject_asks_for_confirmation_first(client, editor, held):
    client.force_login(editor)
    _reveal(client, held)

    first = _decide(client, held, "reject", "Not relevant to travel")

    assert first.status_code == 200
    body = first.content.decode()
    assert "Reject and delete" in body and 'name="confirmed" value="yes"' in body
    assert 'value="Not relevant to travel"' in body  # the reason carried over
    assert selectors.subject_fact(S, "pregnancy_note") is not None  # nothing happened yet

    second = _decide(client, held, "reject", "Not relevant to travel", confirmed="yes")

    assert second.status_code == 302 and second["Location"] == "/staff/review/"
    assert selectors.subject_fact(S, "pregnancy_note") is None
    actions = list(
        FactEvent.objects.filter(subject_id=S).order_by("id").values_list("action", flat=True)
    )
    assert actions[-2:] == [EventAction.VALUE_REVEALED, EventAction.REJECTED]
    assert occurrences(PREGNANCY) == {}


@pytest.fixture
def known():
    FactFactory(subject_id=S, key="home_airport", value="TPE")


def test_a_staff_fact_that_looks_like_health_is_flagged_after_a_warning(client, editor, known):
    client.force_login(editor)
    data = {
        "key": "gate_assistance",
        "value": "Needs a wheelchair at the gate",
        "category": "context",
        "reason": "Phone call",
    }

    warned = client.post(f"{BASE}/add-fact/", data)

    assert warned.status_code == 200
    body = warned.content.decode()
    assert "it will be masked and kept under the sensitive-facts rule" in body
    assert 'name="confirm_sensitive" value="on"' in body
    assert not MemoryFact.objects.filter(subject_id=S, key="gate_assistance").exists()

    added = client.post(f"{BASE}/add-fact/", {**data, "confirm_sensitive": "on"})

    assert added.status_code == 302
    fact = MemoryFact.objects.get(subject_id=S, key="gate_assistance")
    assert fact.sensitive and fact.status == "active"  # a person wrote it: masked, not held


def test_a_plain_staff_fact_is_added_at_once(client, editor, known):
    client.force_login(editor)
    response = client.post(
        f"{BASE}/add-fact/",
        {"key": "meal", "value": "Vegetarian meals", "category": "preference", "reason": "Call"},
    )
    assert response.status_code == 302
    assert not MemoryFact.objects.get(subject_id=S, key="meal").sensitive


def test_a_deleted_fact_keeps_its_category_dates_and_changes_never_key_or_value(
    client, editor, viewer
):
    FactFactory(subject_id=S, key="meal_preference", value="Kosher meals, no shellfish")
    services.fact_edit(
        subject_id=S,
        key="meal_preference",
        value="Halal meals, no shellfish",
        actor=Actor.staff(editor),
        reason="Call",
        expected_version=1,
    )
    learned = MemoryFact.objects.get(subject_id=S, key="meal_preference").created_at
    services.fact_delete(
        subject_id=S,
        key="meal_preference",
        actor=Actor.customer(S),
        reason="deleted by the traveller in the privacy portal",
    )

    erasure = FactEvent.objects.get(subject_id=S, action=EventAction.DELETED)
    kept = erasure.after["erased_fact"]
    assert kept["category"] == "preference" and kept["changes"] == 1
    assert kept["learned_at"][:19] == learned.isoformat()[:19]
    for secret in ("meal_preference", "Kosher", "Halal"):
        assert occurrences(secret) == {}, secret  # pg_dump: key and values gone

    client.force_login(viewer)
    timeline = client.get(f"{BASE}/timeline/").content.decode()
    assert "Deleted preference fact" in timeline and "changed 1 time" in timeline
    assert "The traveller, in the privacy portal" in timeline
    assert f"traveller:{S}" not in timeline and "purge_generation" not in timeline

    # the old address of the fact's page: a "deleted fact" page, not a bare 404
    page = client.get(f"{BASE}/facts/meal_preference/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Deleted fact" in body and "Preference" in body
    assert "Kosher" not in body and "Halal" not in body
    digest = erasure.key[1:]
    assert client.get(f"{BASE}/deleted/{digest}/").status_code == 200
    assert client.get(f"{BASE}/facts/never_was_here/").status_code == 404
    assert client.get(f"{BASE}/deleted/{'0' * len(digest)}/").status_code == 404
