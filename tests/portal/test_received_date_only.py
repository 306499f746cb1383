"""A request entered as a day (a call, an e-mail, a letter) is shown as that day, never with a
made-up hour, on the staff pages, the portal and the CSV; lists put the newest recorded first,
whatever hour an earlier request was received at."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from memoryadmin.facts.actors import Actor
from memoryadmin.privacy import clock
from memoryadmin.privacy.models import PrivacyRequest
from memoryadmin.privacy.services import privacy_request_record
from tests.staff.conftest import editor, privacy_admin  # noqa: F401

pytestmark = pytest.mark.django_db
S = "FF-DAYONLY-1"


def _text(response) -> str:
    assert response.status_code == 200, response.status_code
    return re.sub(r"\s+", " ", response.content.decode())


def test_a_day_entered_by_staff_shows_as_a_day_and_sorts_as_recorded(
    client,
    editor,  # noqa: F811
    privacy_admin,  # noqa: F811
    signed_in,
    settings,
):
    settings.TIME_ZONE = "Asia/Taipei"
    # the portal request came in first, at a known moment, earlier the same day (in Taipei: a
    # run just after its midnight takes the day's first moment, not yesterday's last minutes)
    today = clock.today()
    portal = privacy_request_record(
        subject_id=S,
        kind="access",
        channel="portal",
        received_at=max(timezone.now() - timedelta(minutes=9), clock.day_start(today)),
        actor=Actor.customer(S),
    )
    client.force_login(editor)
    recorded = client.post(
        "/staff/privacy/record/",
        {
            "subject_id": S,
            "kind": "erasure",
            "channel": "phone",
            "received_on": today,
            "identity_check": "airline_account",
        },
    )
    assert recorded.status_code == 302
    phoned = PrivacyRequest.objects.exclude(pk=portal.pk).get()
    assert phoned.received_on == today and phoned.received_at is None

    # the portal: the day alone, and the phone request (recorded last) first
    page = _text(signed_in(S).get("/portal/requests"))
    asked = re.findall(r"Asked on</dt><dd>(.*?)</dd>", page)
    assert len(asked) == 2
    assert asked[0] == (f'<time datetime="{today.isoformat()}">{today.day} {today:%B %Y}</time>'), (
        asked
    )  # no "at 12:00"
    assert " at " in asked[1]  # the portal's own request keeps its moment
    assert page.index(phoned.number) < page.index(portal.number)

    # the staff pages: the day, said to be a day; the list newest recorded first
    detail = _text(client.get(f"/staff/privacy/requests/{phoned.number}/"))
    assert "(entered as a day)" in detail and "12:00" not in detail
    listing = _text(client.get("/staff/privacy/"))
    assert listing.index(phoned.number) < listing.index(portal.number)

    # the CSV: its day, no moment; the portal's moment with the zone's offset
    client.force_login(privacy_admin)
    csv = client.get(
        "/staff/privacy/requests.csv", {"start": today.isoformat(), "end": today.isoformat()}
    )
    rows = {line.split(",")[0]: line for line in csv.content.decode().splitlines()[1:]}
    assert f",{today.isoformat()},," in rows[phoned.number]
    assert "+08:00" in rows[portal.number]
