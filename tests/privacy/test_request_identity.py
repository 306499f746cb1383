"""Who is asking, on whose behalf, and whether it was asked before, through the pages staff and
travellers use: a request "not yet verified" cannot be worked or completed until someone records
the check (the server refuses, the page says why); a request a travel agent made shows them on
the staff page and in the traveller's "Your requests", and the portal link is for the traveller
only; a second request of the same kind while one is open is linked to it, not clocked twice,
and split off with a reason gets its own clock; viewers are refused; bad input is a form error."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from memoryadmin.facts.actors import Actor
from memoryadmin.privacy import clock, flows, selectors
from memoryadmin.privacy.models import PrivacyRequest, RequestStatus
from memoryadmin.privacy.services import privacy_request_record
from memoryadmin.staff.templatetags.staff_time import day
from tests.factories import FactFactory
from tests.staff.conftest import editor, privacy_admin, viewer  # noqa: F401

pytestmark = pytest.mark.django_db

S = "FF-941001"
RECORD = "/staff/privacy/record/"


def _text(response) -> str:
    body = re.sub(r"<[^>]+>", " ", response.content.decode()).replace("&#x27;", "'")
    return re.sub(r"\s+", " ", body)


def _form(**changes) -> dict:
    data = {
        "subject_id": S,
        "kind": "access",
        "channel": "phone",
        "received_on": clock.today(),
        "identity_check": "checked",
        "identity_checked": "booking reference and date of birth",
    }
    data.update(changes)
    return {name: value for name, value in data.items() if value is not None}


def _record(client, **changes) -> PrivacyRequest:
    response = client.post(RECORD, _form(**changes))
    assert response.status_code == 302, _text(response)[:2000]
    number = response["Location"].rstrip("/").rsplit("/", 1)[1]
    return PrivacyRequest.objects.get(number=number)


# --- identity -------------------------------------------------------------------------------


def test_not_yet_verified_cannot_be_completed_nor_erased_until_the_check_is_recorded(
    client,
    editor,  # noqa: F811
):
    FactFactory(subject_id=S, key="seat_preference", value="aisle")
    client.force_login(editor)
    req = _record(client, kind="erasure", identity_check="unverified", identity_checked="")
    assert req.identity_check == "unverified"
    detail = f"/staff/privacy/requests/{req.number}/"

    page = _text(client.get(detail))
    assert "Identity not verified" in page
    assert "until someone records how the traveller's identity was checked" in page
    assert "Erase FF-941001's memory" not in page and "Complete with the evidence" not in page
    assert "Identity not verified" in _text(client.get("/staff/privacy/"))  # and in the list

    # the server refuses, whatever the page offers
    completed = client.post(detail + "complete/", {"note": "done on the phone"})
    assert completed.status_code == 400
    assert "identity is not verified" in _text(completed)
    asked = _text(client.get(detail + "erase/"))
    assert "Nothing is erased for this request until someone records" in asked
    assert "Erase 1 fact" not in asked
    erased = client.post(detail + "erase/", {"reason": "the caller asked"}, follow=True)
    assert "identity is not verified" in _text(erased)
    req.refresh_from_db()
    assert req.status == RequestStatus.OPEN
    assert selectors.subject_fact_count(S) == 1  # nothing erased

    # "checked" needs what was checked: a form error, nothing recorded
    bad = client.post(detail + "identity/", {"identity_check": "checked", "identity_checked": ""})
    assert bad.status_code == 400
    assert "What was checked: Say what was checked" in _text(bad)
    req.refresh_from_db()
    assert req.identity_unverified

    done = client.post(
        detail + "identity/",
        {"identity_check": "checked", "identity_checked": "called back on the booking's number"},
    )
    assert done.status_code == 302
    req.refresh_from_db()
    assert req.identity_check == "checked"
    page = _text(client.get(detail))
    assert "Identity verified" in page  # its own timeline step
    assert "Checked by phone or in person: called back on the booking's number" in page

    erased = client.post(detail + "erase/", {"reason": "the caller asked"})
    assert erased.status_code == 302
    req.refresh_from_db()
    assert req.status == RequestStatus.COMPLETED and selectors.subject_fact_count(S) == 0


def test_an_unverified_access_request_exports_nothing(client, editor):  # noqa: F811
    FactFactory(subject_id=S, key="seat_preference", value="aisle")
    client.force_login(editor)
    req = _record(client, identity_check="unverified", identity_checked="")
    response = client.post(f"/staff/privacy/requests/{req.number}/export/", {"language": "en"})
    assert response.status_code == 302
    assert response["Content-Type"] != "application/zip"
    req.refresh_from_db()
    assert "sha256" not in req.evidence and req.status == RequestStatus.OPEN


def test_a_portal_request_is_verified_by_its_link():
    req = flows.privacy_export_record(subject_id=S, sha256="0" * 64, actor=Actor.customer(S))
    assert req.identity_check == "portal_link"


# --- authority ------------------------------------------------------------------------------


def test_a_travel_agents_request_shows_them_on_both_sides_and_the_link_is_the_travellers(
    client,
    editor,  # noqa: F811
    signed_in,
):
    client.force_login(editor)
    req = _record(
        client,
        agent_name="Jade Lin",
        agent_relation="travel_agent",
        agent_authority="signed letter of authority",
    )
    page = client.get(f"/staff/privacy/requests/{req.number}/")
    text = _text(page)
    assert "Made on the traveller's behalf by Jade Lin (travel agent)" in text
    assert "Authority seen: signed letter of authority" in text
    assert "The portal link goes to the traveller only, never to Jade Lin" in text
    assert "/portal/open/" not in page.content.decode()  # no link on the page to hand over

    english = _text(signed_in(S).get("/portal/requests"))
    assert "Made for you by Jade Lin (your travel agent)" in english
    assert "Asked by phone" in english and "You asked us by phone" not in english
    chinese = _text(signed_in(S, language="zh-hant").get("/portal/requests"))
    assert "由 Jade Lin（您的旅行社）代您提出" in chinese
    assert "透過電話提出" in chinese and "您透過電話申請" not in chinese


def test_the_agents_fields_come_together_and_bad_input_is_a_form_error(client, editor):  # noqa: F811
    client.force_login(editor)
    response = client.post(RECORD, _form(agent_name="Jade Lin", identity_check=None))
    assert response.status_code == 400
    text = _text(response)
    assert "There is a problem" in text
    assert "How the traveller's identity was verified: This field is required" in text
    response = client.post(RECORD, _form(agent_name="Jade Lin", agent_relation="cousin"))
    assert response.status_code == 400
    assert "Their relation: Select a valid choice" in _text(response)
    response = client.post(RECORD, _form(agent_name="Jade Lin", agent_relation="family"))
    assert response.status_code == 400
    assert "Evidence of their authority seen: Say what evidence" in _text(response)
    response = client.post(RECORD, _form(identity_checked=""))
    assert response.status_code == 400
    assert "What was checked: Say what was checked" in _text(response)
    assert PrivacyRequest.objects.count() == 0


# --- duplicates -----------------------------------------------------------------------------


def test_a_duplicate_is_linked_and_not_clocked_twice(client, editor):  # noqa: F811
    client.force_login(editor)
    first = _record(client, received_on=clock.today() - timedelta(days=40))  # overdue
    second = _record(client, channel="email")
    assert second.duplicate_of == first
    assert second.due_on == first.due_on  # no clock of its own

    listing = client.get("/staff/privacy/")
    overdue = listing.context["overdue"]
    assert [row.number for row in overdue] == [first.number]
    assert selectors.privacy_requests_due_counts()["overdue"] == 1
    assert f"(duplicate of {first.number})" in _text(listing)

    text = _text(client.get(f"/staff/privacy/requests/{second.number}/"))
    assert f"A duplicate of {first.number}" in text
    assert f"With {first.number}: no clock of its own" in text
    assert "Overdue." not in text
    text = _text(client.get(f"/staff/privacy/requests/{first.number}/"))
    assert f"a duplicate was received ({second.number}, e-mail)" in text
    assert "Overdue." in text


def test_completing_the_original_completes_its_duplicate_with_it(client, editor):  # noqa: F811
    client.force_login(editor)
    first = _record(client)  # we hold nothing: completes with "nothing held"
    second = _record(client, channel="letter")
    third = _record(client, identity_check="unverified", identity_checked="")
    response = client.post(f"/staff/privacy/requests/{first.number}/complete/", {"note": ""})
    assert response.status_code == 302
    second.refresh_from_db()
    third.refresh_from_db()
    assert second.status == RequestStatus.COMPLETED
    assert second.evidence["answered_with"] == first.number
    # one not verified is not answered unchecked: it gets its own clock instead
    assert third.status == RequestStatus.OPEN and third.duplicate_of is None
    assert third.due_on == clock.due_on(third.received_on)


def test_split_gives_the_duplicate_its_own_clock(client, editor, viewer):  # noqa: F811
    client.force_login(editor)
    first = _record(client, received_on=clock.today() - timedelta(days=40))
    second = _record(client, received_on=clock.today() - timedelta(days=3))
    split = f"/staff/privacy/requests/{second.number}/split/"
    page = _text(client.get(split))
    assert f"due on {day(clock.due_on(second.received_on))}" in page

    refused = client.post(split, {"reason": " "})
    assert refused.status_code == 400
    assert "Reason: Say why it is a request of its own" in _text(refused)
    second.refresh_from_db()
    assert second.duplicate_of == first

    done = client.post(split, {"reason": "the letter also asks for the call recordings"})
    assert done.status_code == 302
    second.refresh_from_db()
    assert second.duplicate_of is None
    assert second.due_on == clock.due_on(clock.today() - timedelta(days=3))
    due_soon = client.get("/staff/privacy/").context["due_soon"]
    overdue = client.get("/staff/privacy/").context["overdue"]
    assert [r.number for r in overdue] == [first.number]
    assert second.number not in [r.number for r in due_soon]  # due in about four weeks
    text = _text(client.get(f"/staff/privacy/requests/{first.number}/"))
    assert f"{second.number} split off: the letter also asks for the call recordings" in text


def test_a_portal_request_follows_the_same_rule():
    staff = privacy_request_record(
        subject_id=S,
        kind="access",
        channel="phone",
        received_on=clock.today(),
        actor=Actor.system("test"),
        identity_check="airline_account",
    )
    portal = flows.privacy_export_record(subject_id=S, sha256="1" * 64, actor=Actor.customer(S))
    assert portal.duplicate_of == staff
    assert portal.status == RequestStatus.COMPLETED  # the traveller's download answered it
    staff.refresh_from_db()
    assert staff.status == RequestStatus.OPEN  # the original stays for staff to answer


# --- who may -------------------------------------------------------------------------------


def test_viewers_may_not_verify_or_split(client, editor, viewer):  # noqa: F811
    client.force_login(editor)
    _record(client)
    req = _record(client, identity_check="unverified", identity_checked="")
    client.force_login(viewer)
    base = f"/staff/privacy/requests/{req.number}/"
    page = _text(client.get(base))
    assert "Identity not verified" in page and "Record the identity check" not in page
    assert "Split it off" not in page
    for url in (base + "identity/", base + "split/"):
        assert client.get(url).status_code == 403
    refused = client.post(base + "identity/", {"identity_check": "airline_account"})
    assert refused.status_code == 403
    assert client.post(base + "split/", {"reason": "mine"}).status_code == 403
    req.refresh_from_db()
    assert req.identity_unverified and req.duplicate_of is not None


def test_request_page_queries_stay_bounded(
    client,
    editor,  # noqa: F811
    django_assert_max_num_queries,
):
    client.force_login(editor)
    first = _record(client, agent_name="Jade Lin", agent_relation="other", agent_authority="ID")
    for _ in range(5):
        _record(client)
    client.get(f"/staff/privacy/requests/{first.number}/")
    with django_assert_max_num_queries(12):
        assert client.get(f"/staff/privacy/requests/{first.number}/").status_code == 200


# Committed data: four connections, each its own transaction.
@pytest.mark.django_db(transaction=True)
def test_requests_arriving_together_make_one_original_and_the_rest_duplicates():
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from django.db import connection

    together = Barrier(4)

    def record(n: int) -> str:
        try:
            together.wait()
            return privacy_request_record(
                subject_id=S,
                kind="erasure",
                channel="phone",
                received_on=clock.today(),
                actor=Actor.system("test"),
                note=f"call {n}",
            ).number
        finally:
            connection.close()

    with ThreadPoolExecutor(4) as pool:
        numbers = list(pool.map(record, range(4)))
    rows = PrivacyRequest.objects.filter(number__in=numbers)
    assert rows.filter(duplicate_of=None).count() == 1
    assert rows.exclude(duplicate_of=None).count() == 3


def test_the_demo_has_an_agent_made_request(settings, client, viewer, signed_in):  # noqa: F811
    from memoryadmin.staff.demo.story import AGENT_DEMO
    from tests.support.demo import seed_demo

    seed_demo(settings)
    made = PrivacyRequest.objects.get(subject_id=AGENT_DEMO, agent_relation="travel_agent")
    assert made.identity_check == "checked" and made.status == RequestStatus.OPEN
    client.force_login(viewer)
    text = _text(client.get(f"/staff/privacy/requests/{made.number}/"))
    assert "Made on the traveller's behalf by Jade Lin, Lin Travel (travel agent)" in text
    assert "Authority seen: signed letter of authority" in text
    portal = _text(signed_in(AGENT_DEMO).get("/portal/requests"))
    assert "Made for you by Jade Lin, Lin Travel (your travel agent)" in portal


def test_the_traveller_reads_that_a_duplicate_is_answered_with_the_first(
    client,
    editor,  # noqa: F811
    signed_in,
):
    client.force_login(editor)
    first = _record(client)
    _record(client, channel="letter")
    english = _text(signed_in(S).get("/portal/requests"))
    assert english.count(f"asked again while we were working on {first.number}") == 1
    chinese = _text(signed_in(S, language="zh-hant").get("/portal/requests"))
    assert f"我們處理 {first.number} 期間又收到同樣的申請" in chinese


def test_refusing_the_original_leaves_its_duplicate_to_be_answered_on_its_own(
    client,
    editor,  # noqa: F811
    privacy_admin,  # noqa: F811
):
    client.force_login(editor)
    first = _record(client, received_on=clock.today() - timedelta(days=20))
    second = _record(client, received_on=clock.today() - timedelta(days=2))
    client.force_login(privacy_admin)
    refused = client.post(
        f"/staff/privacy/requests/{first.number}/refuse/",
        {"ground": "Art. 12(5): manifestly unfounded"},
    )
    assert refused.status_code == 302
    second.refresh_from_db()
    assert second.status == RequestStatus.OPEN and second.duplicate_of is None
    assert second.due_on == clock.due_on(second.received_on)
    text = _text(client.get(f"/staff/privacy/requests/{second.number}/"))
    assert f"{first.number} was refused; this request is answered on its own" in text
