"""The request pages tell the truth: an erasure request with memory left shows the count and the
erase step (titled with the traveller, the count and the request), refuses "Complete" beside its
form; the reason typed at the erase step is on the timeline; a request for a traveller we hold
nothing about says so and links nothing that answers 404; "Received" is the day entered."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from memoryadmin.facts import services as fact_services
from memoryadmin.facts.actors import Actor
from memoryadmin.privacy import clock
from memoryadmin.privacy.models import PrivacyRequest, RequestStatus
from memoryadmin.privacy.services import privacy_request_record
from memoryadmin.staff.templatetags.staff_time import day
from tests.factories import FactFactory
from tests.staff.conftest import editor, privacy_admin, viewer  # noqa: F401

pytestmark = pytest.mark.django_db

S = "FF-932101"


def _request(kind: str = "erasure", subject_id: str = S, days_ago: int = 0) -> PrivacyRequest:
    return privacy_request_record(
        subject_id=subject_id,
        kind=kind,
        channel="phone",
        received_on=clock.today() - timedelta(days=days_ago),
        actor=Actor.system("test"),
    )


def _text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def test_an_erasure_with_memory_left_shows_the_count_and_refuses_completion(
    client,
    editor,  # noqa: F811
):
    for n in range(12):
        FactFactory(subject_id=S, key=f"topic_{n}", value="x")
    req = _request()
    detail = f"/staff/privacy/requests/{req.number}/"
    client.force_login(editor)
    page = client.get(detail)
    text = _text(page)
    assert f"{S} still has 12 facts in memory" in text
    assert f"Erase {S}'s memory (12 facts)…" in text.replace("&#x27;", "'")
    assert "Complete with the evidence" not in text  # nothing to complete yet

    refused = client.post(detail + "complete/", {"note": "erased on the phone"})
    assert refused.status_code == 400
    assert "still has 12 facts in memory" in _text(refused)
    assert PrivacyRequest.objects.get().status == RequestStatus.OPEN

    erase = client.get(detail + "erase/")
    text = _text(erase).replace("&#x27;", "'")
    assert f"Erase {S}'s memory (12 facts) for request {req.number}" in text
    assert text.index("12 facts will be erased") < text.index("Erase 12 facts")  # count first

    done = client.post(detail + "erase/", {"reason": "Traveller phoned on Tuesday"})
    assert done.status_code == 302
    after = _text(client.get(detail))
    assert "Memory erased" in after and "Traveller phoned on Tuesday" in after
    req.refresh_from_db()
    assert req.status == RequestStatus.COMPLETED
    assert req.evidence["rows_remaining"] == 0


def test_an_erase_put_on_hold_shows_the_reason_typed_on_its_timeline(
    client,
    editor,  # noqa: F811
):
    FactFactory(subject_id=S, key="seat", value="x")
    fact_services.subject_set_legal_hold(
        subject_id=S, hold=True, actor=Actor.system("test"), reason="case 2027-14"
    )
    req = _request()
    detail = f"/staff/privacy/requests/{req.number}/"
    client.force_login(editor)
    done = client.post(detail + "erase/", {"reason": "Traveller phoned on Tuesday"})
    assert done.status_code == 302
    req.refresh_from_db()
    assert req.status == RequestStatus.ON_HOLD
    after = _text(client.get(detail))
    assert "Traveller phoned on Tuesday" in after
    assert "Art. 17(3)(e)" in after  # the ground as well


def test_an_erase_without_a_reason_shows_the_error_beside_its_field_and_in_the_summary(
    client,
    editor,  # noqa: F811
):
    FactFactory(subject_id=S, key="seat", value="x")
    req = _request()
    client.force_login(editor)
    response = client.post(f"/staff/privacy/requests/{req.number}/erase/", {"reason": ""})
    assert response.status_code == 400
    body = response.content.decode()
    assert body.count("Say why, e.g. the traveller") == 2  # beside the field, and the summary
    assert re.search(r'class="field-error">Say why', body)
    assert re.search(r'<li><a href="#[^"]+">[^<:]+: Say why', body)  # which links to it


def test_a_request_about_a_traveller_we_hold_nothing_about(client, editor, viewer):  # noqa: F811
    req = _request(kind="access", subject_id="FF-NOBODY")
    detail = f"/staff/privacy/requests/{req.number}/"
    client.force_login(viewer)
    page = client.get(detail)
    assert page.status_code == 200
    assert "we hold no memory for this id" in _text(page)
    for href in set(re.findall(r'href="(/[^"#]*)"', page.content.decode())):
        if href.startswith(("/static/", "/logout")):
            continue
        assert client.get(href).status_code == 200, href
    listing = client.get("/staff/privacy/")
    assert "/staff/travellers/FF-NOBODY/" not in listing.content.decode()

    client.force_login(editor)
    done = client.post(detail + "complete/", {"note": ""})
    assert done.status_code == 302
    req.refresh_from_db()
    assert req.status == RequestStatus.COMPLETED and req.evidence == {"nothing_held": True}
    assert "Nothing held" in _text(client.get(detail))


def test_received_is_the_day_entered(client, editor, viewer):  # noqa: F811
    client.force_login(editor)
    entered = clock.today() - timedelta(days=3)
    response = client.post(
        "/staff/privacy/record/",
        {
            "subject_id": S,
            "kind": "access",
            "channel": "letter",
            "received_on": entered,
            "identity_check": "checked",
            "identity_checked": "signed letter matched the booking's address",
        },
    )
    assert response.status_code == 302
    req = PrivacyRequest.objects.get()
    assert req.received_on == entered and req.received_at is None  # a day: no hour made up
    client.force_login(viewer)
    text = _text(client.get(f"/staff/privacy/requests/{req.number}/"))
    assert f"Received {day(entered)}" in text
    assert "ago" not in text.split("Received", 1)[1].split("Due", 1)[0]
