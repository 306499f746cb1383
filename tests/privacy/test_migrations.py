"""Data migrations of the privacy app, run forwards on rows written under the schema before."""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.facts.test_migrations import _migrate  # the one way these tests migrate

TAIPEI = ZoneInfo("Asia/Taipei")


@pytest.mark.django_db(transaction=True)
def test_a_day_entered_by_staff_loses_its_made_up_hour_and_keeps_its_day(settings):
    """Before, a letter's day was stored as noon of it in the airline's zone, and a portal
    request at its moment; after, the letter keeps its day only, the portal request both."""
    settings.TIME_ZONE = "Asia/Taipei"
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        old = _migrate([("privacy", "0003_issue31_attempt_partitions")])
        request = old.get_model("privacy", "PrivacyRequest")
        common = {"kind": "access", "due_on": date(2027, 1, 5), "original_due_on": date(2027, 1, 5)}
        request.objects.create(
            number="PR-LETTER",
            subject_id="T-1",
            channel="letter",
            received_at=datetime(2026, 12, 5, 12, 0, tzinfo=TAIPEI),
            **common,
        )
        request.objects.create(
            number="PR-PORTAL",
            subject_id="T-1",
            channel="portal",
            received_at=datetime(2026, 12, 5, 1, 30, tzinfo=TAIPEI),  # 17:30 UTC the day before
            **common,
        )
    finally:
        _migrate(latest)

    from memoryadmin.privacy.models import PrivacyRequest

    letter = PrivacyRequest.objects.get(number="PR-LETTER")
    portal = PrivacyRequest.objects.get(number="PR-PORTAL")
    assert (letter.received_on, letter.received_at) == (date(2026, 12, 5), None)
    assert portal.received_on == date(2026, 12, 5)  # the airline's day, not UTC's
    assert portal.received_at == datetime(2026, 12, 5, 1, 30, tzinfo=TAIPEI)


@pytest.mark.django_db(transaction=True)
def test_portal_requests_were_verified_by_their_link_and_staff_ones_block_nothing():
    """0006: a request made in the portal before it was verified by the portal link; one staff
    recorded keeps "" (not recorded), so no request recorded before is blocked; none is a
    duplicate or made by someone else."""
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        old = _migrate([("privacy", "0005_restriction_webhook_events")])
        request = old.get_model("privacy", "PrivacyRequest")
        common = {
            "subject_id": "T-6",
            "kind": "access",
            "received_on": date(2026, 12, 1),
            "due_on": date(2027, 1, 1),
            "original_due_on": date(2027, 1, 1),
        }
        request.objects.create(number="PR-PORTAL6", channel="portal", **common)
        request.objects.create(number="PR-PHONE6", channel="phone", **common)
    finally:
        _migrate(latest)

    from memoryadmin.privacy.models import PrivacyRequest

    portal = PrivacyRequest.objects.get(number="PR-PORTAL6")
    phone = PrivacyRequest.objects.get(number="PR-PHONE6")
    assert portal.identity_check == "portal_link"
    assert phone.identity_check == "" and not phone.identity_unverified
    assert phone.duplicate_of is None and phone.agent_name == ""
