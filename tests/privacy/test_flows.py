"""Requests recorded by the tools that carry them out: forget everything (verification after
commit), legal hold (on hold, nothing erased, carried out when lifted), export, correction,
pause; and the staff-side services (refuse needs a ground, extend needs a reason and a date)."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.utils import timezone

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent, MemoryFact, PolicyEvent
from memoryadmin.privacy import flows, selectors
from memoryadmin.privacy import services as privacy
from memoryadmin.privacy.errors import RequestInvalid
from memoryadmin.privacy.models import OutboxEvent, PrivacyRequest, RequestStatus
from tests.factories import FactFactory, UserFactory
from tests.support.dbscan import occurrences

pytestmark = [pytest.mark.django_db]

S = "FF-920001"
VALUE = "Always books the bulkhead row for legroom"


def traveller() -> Actor:
    return Actor.customer(S)


def test_forget_everything_is_a_completed_erasure_request_with_receipt_and_verification():
    FactFactory(subject_id=S, key="legroom", value=VALUE)
    outcome = flows.privacy_forget(subject_id=S, actor=traveller(), reason="portal")
    request = flows.privacy_verify_erasure(request_id=outcome.request.pk, actor=traveller())

    assert request.kind == "erasure" and request.channel == "portal"
    assert request.status == RequestStatus.COMPLETED
    assert request.evidence["receipt"] == outcome.receipt.number
    assert request.evidence["rows_remaining"] == 0
    steps = [step.action for step in selectors.request_steps(request)]
    assert steps == ["received", "started", "erased", "completed"]  # each status change a step
    assert PolicyEvent.objects.filter(action="privacy_request", target=request.number).count() == 4
    assert occurrences(VALUE) == {}
    assert occurrences("legroom") == {}


def test_a_failed_verification_keeps_the_request_open():
    FactFactory(subject_id=S, key="legroom", value=VALUE)
    outcome = flows.privacy_forget(subject_id=S, actor=traveller(), reason="portal")
    # A history row from before the erasure that still shows its key in plain:
    stray = FactEvent.objects.create(
        subject_id=S, key="legroom", action="updated", actor_kind="system"
    )
    FactEvent.objects.filter(pk=stray.pk).update(created_at=timezone.now() - timedelta(days=1))
    request = flows.privacy_verify_erasure(request_id=outcome.request.pk, actor=traveller())
    assert request.status == RequestStatus.IN_PROGRESS
    assert request.steps.last().detail == {"rows_remaining": 1}


def test_under_legal_hold_the_request_waits_and_lifting_the_hold_carries_it_out():
    FactFactory(subject_id=S, key="legroom", value=VALUE)
    staff = Actor.staff(UserFactory(username="lex"))
    services.subject_set_legal_hold(subject_id=S, hold=True, actor=staff, reason="case 2027-14")

    outcome = flows.privacy_forget(subject_id=S, actor=traveller(), reason="portal")
    assert outcome.receipt is None
    request = PrivacyRequest.objects.get()
    assert request.status == RequestStatus.ON_HOLD
    assert "Art. 17(3)(e)" in request.ground
    assert MemoryFact.objects.filter(subject_id=S).count() == 1  # nothing erased

    [carried] = flows.privacy_legal_hold_set(
        subject_id=S, hold=False, actor=staff, reason="case closed"
    )
    assert MemoryFact.objects.filter(subject_id=S).count() == 0
    done = flows.privacy_verify_erasure(request_id=carried.pk, actor=staff)
    assert done.status == RequestStatus.COMPLETED
    assert done.evidence["rows_remaining"] == 0 and done.evidence["receipt"].startswith("R-")
    actions = [step.action for step in selectors.request_steps(done)]
    assert actions == ["received", "on_hold", "hold_lifted", "started", "erased", "completed"]


def test_a_download_is_a_completed_access_request_with_its_sha256():
    request = flows.privacy_export_record(subject_id=S, sha256="ab" * 32, actor=traveller())
    assert (request.kind, request.status, request.evidence) == (
        "access",
        "completed",
        {"sha256": "ab" * 32},
    )


def test_a_correction_is_a_rectification_and_emits_a_keyless_event(recipient):
    fact = FactFactory(subject_id=S, key="legroom", value=VALUE)
    request = flows.privacy_correct(
        subject_id=S,
        key="legroom",
        value="Books an exit row",
        expected_version=fact.version,
        actor=traveller(),
        reason="portal",
    )
    assert (request.kind, request.status) == ("rectification", "completed")
    types = list(OutboxEvent.objects.values_list("event_type", flat=True))
    assert types == ["memory.fact.corrected", "privacy_request.completed"]
    for event in OutboxEvent.objects.all():
        assert "legroom" not in str(event.__dict__) and "exit row" not in str(event.__dict__)


def test_pausing_is_a_restriction_and_resuming_is_not_a_request():
    _subject, request = flows.privacy_pause(
        subject_id=S,
        memory_paused=True,
        memory_use_paused=False,
        actor=traveller(),
        reason="portal",
    )
    assert (request.kind, request.status) == ("restriction", "completed")
    _subject, again = flows.privacy_pause(
        subject_id=S,
        memory_paused=False,
        memory_use_paused=False,
        actor=traveller(),
        reason="portal",
    )
    assert again is None


def _phone_request(subject_id: str = S, **kwargs) -> PrivacyRequest:
    editor = Actor.staff(UserFactory(username="eddie"))
    return privacy.privacy_request_record(
        subject_id=subject_id,
        kind="access",
        channel="phone",
        **(kwargs or {"received_at": timezone.now()}),
        actor=editor,
        note="called in",
    )


def test_staff_exporting_for_a_recorded_request_starts_it_once_in_its_timeline():
    request = _phone_request()
    staff = Actor.staff(UserFactory(username="ada"))

    for sha256 in ("ab" * 32, "cd" * 32):  # exported twice: started once
        request = flows.privacy_export_record(
            subject_id=S, sha256=sha256, actor=staff, request_id=request.pk
        )

    request.refresh_from_db()
    assert request.status == RequestStatus.IN_PROGRESS
    assert request.evidence == {"sha256": "cd" * 32}
    steps = [(step.action, step.actor_label) for step in selectors.request_steps(request)]
    assert steps == [
        ("received", "eddie"),
        ("started", "ada"),
        ("exported", "ada"),
        ("exported", "ada"),
    ]


def test_refusing_needs_a_ground():
    request = _phone_request()
    admin = Actor.staff(UserFactory(username="priya"))
    with pytest.raises(RequestInvalid) as refused:
        privacy.privacy_request_refuse(request_id=request.pk, actor=admin, ground="  ")
    assert "ground" in refused.value.fields
    request.refresh_from_db()
    assert request.status == RequestStatus.OPEN  # nothing half-written
    privacy.privacy_request_refuse(
        request_id=request.pk, actor=admin, ground="Art. 12(5): manifestly unfounded"
    )
    request.refresh_from_db()
    assert request.status == RequestStatus.REFUSED


def test_an_extension_needs_a_reason_and_the_day_the_traveller_was_told():

    request = _phone_request(received_on=date(2026, 10, 31))
    assert request.due_on == date(2026, 11, 30)
    admin = Actor.staff(UserFactory(username="priya"))
    with pytest.raises(RequestInvalid) as refused:
        privacy.privacy_request_extend(
            request_id=request.pk, actor=admin, months=2, reason="", told_on=None
        )
    assert set(refused.value.fields) == {"reason", "told_on"}
    privacy.privacy_request_extend(
        request_id=request.pk,
        actor=admin,
        months=2,
        reason="many linked requests",
        told_on=date(2026, 11, 20),
    )
    request.refresh_from_db()
    assert request.due_on == date(2027, 1, 31) and request.original_due_on == date(2026, 11, 30)


def test_due_counts_for_the_overview_and_metrics():
    from memoryadmin.privacy import clock

    today = clock.today()
    # three travellers (a second request of one traveller would be a duplicate, unclocked)
    _phone_request(received_on=today - timedelta(days=40))  # overdue
    _phone_request(S + "-2", received_on=today - timedelta(days=27))  # due soon
    _phone_request(S + "-3")  # due in a month
    assert selectors.privacy_requests_due_counts() == {"due_7d": 1, "overdue": 1}
