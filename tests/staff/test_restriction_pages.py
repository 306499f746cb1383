"""Staff and a restricted fact (GDPR Art. 18): they see it as restricted with the traveller's
words (escaped) on the traveller page, the fact page and the request; an editor stops the use
for a request received by phone, with a reason; and resolves it by correcting the value or by
confirming it with a note, each completing the restriction request. Viewers are refused."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import EventAction, MemoryFact
from memoryadmin.facts.selectors import fact_history
from memoryadmin.privacy import restriction
from memoryadmin.privacy.models import Channel, PrivacyRequest, RequestKind, RequestStatus
from tests.factories import FactFactory
from tests.staff.conftest import editor, viewer  # noqa: F401

pytestmark = [pytest.mark.django_db]

S = "FF-RS-0300"
KEY = "seat_preference"
VALUE = "Prefers the middle seat"
NOTE = "Not me <script>alert(1)</script>, I take the aisle"


@pytest.fixture
def restricted(db):
    FactFactory(subject_id=S, key=KEY, value=VALUE)
    return restriction.privacy_restrict(
        subject_id=S, key=KEY, actor=Actor.customer(S), reason="portal", note=NOTE
    )


def _request() -> PrivacyRequest:
    return PrivacyRequest.objects.get(subject_id=S, kind=RequestKind.RESTRICTION)


def test_staff_see_the_travellers_words_escaped(client, editor, restricted):  # noqa: F811
    client.force_login(editor)
    for url in (
        reverse("staff:traveller", args=[S]),
        reverse("staff:fact", args=[S, KEY]),
        reverse("privacy:request", args=[restricted.number]),
    ):
        page = client.get(url).content.decode()
        assert "Restricted by the traveller" in page, url
        assert "Not me &lt;script&gt;alert(1)&lt;/script&gt;, I take the aisle" in page, url
        assert "<script>alert(1)" not in page, url
    assert (
        reverse("staff:fact_confirm", args=[S, KEY])
        in client.get(reverse("staff:fact", args=[S, KEY])).content.decode()
    )


def test_the_request_names_its_fact_once_and_not_as_an_erased_correction(
    client,
    editor,  # noqa: F811
    restricted,
):
    """The restriction's evidence holds the fact's keyed hash, as a rectification's does: the
    page shows the Fact row (the fact is still held), never "Correction: A fact since erased"."""
    client.force_login(editor)
    page = client.get(reverse("privacy:request", args=[restricted.number])).content.decode()
    assert 'data-evidence="restricted_fact"' in page
    assert 'data-evidence="correction"' not in page and "A fact since erased" not in page


def test_an_editor_stops_the_use_for_a_phone_request(client, editor):  # noqa: F811
    FactFactory(subject_id=S, key=KEY, value=VALUE)
    client.force_login(editor)
    url = reverse("staff:fact_restrict", args=[S, KEY])
    assert client.get(url).status_code == 200
    assert client.post(url, {"reason": ""}).status_code == 400  # a reason is required
    assert MemoryFact.objects.get(subject_id=S, key=KEY).restricted_at is None
    assert client.post(url, {"reason": "traveller called, says it is wrong"}).status_code == 302
    fact = MemoryFact.objects.get(subject_id=S, key=KEY)
    assert (fact.restricted_by, fact.value) == ("staff", VALUE)
    request = _request()
    assert (request.channel, request.status) == (Channel.PHONE, RequestStatus.IN_PROGRESS)
    assert (
        "Restricted by staff" in client.get(reverse("staff:fact", args=[S, KEY])).content.decode()
    )


def test_correcting_the_value_lifts_it_and_completes_the_request(
    client,
    editor,  # noqa: F811
    restricted,
):
    client.force_login(editor)
    response = client.post(
        reverse("staff:fact_edit", args=[S, KEY]),
        {"value": "Prefers the aisle seat", "category": "preference", "reason": "checked",
         "version": 1},
    )  # fmt: skip
    assert response.status_code == 302
    fact = MemoryFact.objects.get(subject_id=S, key=KEY)
    assert (fact.value, fact.restricted_at, fact.restriction_note) == ("Prefers the aisle seat",
                                                                       None, "")  # fmt: skip
    request = _request()
    assert (request.status, request.evidence["outcome"]) == (RequestStatus.COMPLETED, "corrected")
    actions = [e.action for e in fact_history(S, KEY)]
    assert actions.count(EventAction.RESTRICTED) == actions.count(EventAction.UNRESTRICTED) == 1


def test_confirming_needs_a_note_and_resumes_the_use(client, editor, restricted):  # noqa: F811
    client.force_login(editor)
    url = reverse("staff:fact_confirm", args=[S, KEY])
    assert client.get(url).status_code == 200
    assert client.post(url, {"reason": " "}).status_code == 400
    assert MemoryFact.objects.get(subject_id=S, key=KEY).restricted_at is not None
    assert client.post(url, {"reason": "booking history shows middle seats"}).status_code == 302
    fact = MemoryFact.objects.get(subject_id=S, key=KEY)
    assert (fact.value, fact.restricted_at) == (VALUE, None)
    request = _request()
    assert (request.status, request.evidence["outcome"]) == (RequestStatus.COMPLETED, "confirmed")
    steps = [s.action for s in request.steps.all()]
    assert steps[-2:] == ["restriction_lifted", "completed"]


def test_viewers_cannot_stop_or_confirm(client, viewer, restricted):  # noqa: F811
    client.force_login(viewer)
    for name in ("staff:fact_restrict", "staff:fact_confirm"):
        assert client.post(reverse(name, args=[S, KEY]), {"reason": "x"}).status_code == 403
    assert MemoryFact.objects.get(subject_id=S, key=KEY).restricted_at is not None
