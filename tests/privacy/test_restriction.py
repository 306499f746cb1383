"""Stopping the use of one fact while it is checked (GDPR Art. 18(1)(a)), through the pages as
people use them: the traveller in the portal, the agent through its API and DjangoMemoryStore,
and the recipients told of it (Art. 19)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.erasure import key_digest
from memoryadmin.facts.models import EventAction, FactEvent, MemoryFact
from memoryadmin.facts.selectors import fact_history
from memoryadmin.facts.store import DjangoMemoryStore
from memoryadmin.privacy.models import PrivacyRequest, RequestKind, RequestStatus
from tests.api.conftest import agent, facts_url, issue_token, make_agent, subject_url  # noqa: F401
from tests.factories import FactFactory
from tests.facts.store_contract import run
from tests.portal.conftest import issue_link, signed_in  # noqa: F401

pytestmark = [pytest.mark.django_db]

S = "FF-RS-0001"
DOUBT = "seat_preference"
DOUBTED = "Prefers the middle seat on long flights"
OTHER = "meal_preference"
NOTE = "I never said that <b>middle</b>: I always take the aisle"


@pytest.fixture
def facts(db):
    FactFactory(subject_id=S, key=DOUBT, value=DOUBTED, category="constraint")
    FactFactory(subject_id=S, key=OTHER, value="Vegetarian meals, no eggs", category="preference")


def _stop_in_portal(client, key: str = DOUBT, note: str = NOTE):
    home = client.get(reverse("portal:home"))
    stop_url = reverse("portal:fact-restrict", args=[key])
    assert stop_url in home.content.decode()
    assert "Stop using this while you check it" in home.content.decode()
    page = client.get(stop_url)
    assert page.status_code == 200
    assert "What is wrong?" in page.content.decode()
    return client.post(stop_url, {"note": note})


def _agent_keys(agent) -> dict[str, list[str]]:  # noqa: F811
    return {
        "facts": [f["key"] for f in agent.get(facts_url(S)).json()["facts"]],
        "tier_one": [f["key"] for f in agent.get(subject_url(S, "tier-one")).json()["facts"]],
        "search": [
            f["key"] for f in agent.get(facts_url(S, "search"), {"q": "seat meals"}).json()["facts"]
        ],
    }


def test_a_traveller_stops_the_use_of_one_fact_and_the_agent_no_longer_gets_it(
    facts,
    signed_in,  # noqa: F811
    agent,  # noqa: F811
):
    assert _agent_keys(agent) == {"facts": [DOUBT, OTHER], "tier_one": [DOUBT, OTHER],
                                  "search": [DOUBT, OTHER]}  # fmt: skip
    client = signed_in(S)
    response = _stop_in_portal(client)
    assert response.status_code == 302

    # The agent: no read returns it, the other fact is untouched.
    assert _agent_keys(agent) == {"facts": [OTHER], "tier_one": [OTHER], "search": [OTHER]}
    assert agent.get(facts_url(S, DOUBT)).status_code == 404
    store = DjangoMemoryStore(session_id="s-1", native=False)
    assert [f.key for f in run(store.get_facts, S)] == [OTHER]
    assert [f.key for f in run(store.tier_one, S)] == [OTHER]
    assert [f.key for f in run(store.search_facts, S, "seat")] == []

    # Still stored, unchanged, with the traveller's words beside it.
    row = MemoryFact.objects.get(subject_id=S, key=DOUBT)
    assert (row.value, row.version, row.restricted_by) == (DOUBTED, 1, "customer")
    assert row.restriction_note == NOTE and row.restricted_at is not None
    assert MemoryFact.objects.get(subject_id=S, key=OTHER).restricted_at is None

    # A restriction request with the legal clock, linked through the keyed hash only.
    [request] = PrivacyRequest.objects.filter(subject_id=S, kind=RequestKind.RESTRICTION)
    assert request.status == RequestStatus.IN_PROGRESS
    assert request.evidence["key_hash"] == key_digest(S, DOUBT)
    assert request.due_on is not None
    assert DOUBTED not in str(request.evidence) and NOTE not in request.note
    assert [s.action for s in request.steps.all()] == ["received", "started", "restricted"]

    # The card and "Your requests" say so; the note is escaped wherever it is shown.
    home = client.get(reverse("portal:home")).content.decode()
    assert "We are checking this." in home and "The assistant is not using it." in home
    assert reverse("portal:fact-unrestrict", args=[DOUBT]) in home
    requests_page = client.get(reverse("portal:requests")).content.decode()
    assert "We are checking this. The assistant is not using it." in requests_page
    assert request.number in requests_page

    # The history has the step.
    actions = [e.action for e in fact_history(S, DOUBT)]
    assert EventAction.RESTRICTED in actions


def test_the_agents_save_and_extraction_leave_a_restricted_value_alone(
    facts,
    agent,  # noqa: F811
):
    services.fact_restrict(subject_id=S, key=DOUBT, actor=Actor.customer(S), reason="portal")
    events = FactEvent.objects.count()
    response = agent.put(
        facts_url(S),
        {"facts": [{"key": DOUBT, "value": "Prefers the window", "category": "constraint"}]},
        format="json",
    )
    assert response.status_code == 200
    assert response.json()["facts"] == [f for f in response.json()["facts"] if f["key"] != DOUBT]
    row = MemoryFact.objects.get(subject_id=S, key=DOUBT)
    assert (row.value, row.version) == (DOUBTED, 1)
    assert FactEvent.objects.count() == events  # nothing written, nothing recorded
    result = services.fact_upsert(
        subject_id=S,
        facts=[services.FactDraft(DOUBT, "Prefers the window", "constraint")],
        actor=Actor.extraction(),
    )
    assert result.kept_restricted == [DOUBT] and not result.changed
    assert not result.states[DOUBT].agent_visible
    assert MemoryFact.objects.get(subject_id=S, key=DOUBT).value == DOUBTED


def test_the_traveller_lifts_it_and_the_request_completes(
    facts,
    signed_in,  # noqa: F811
    agent,  # noqa: F811
):
    client = signed_in(S)
    _stop_in_portal(client)
    url = reverse("portal:fact-unrestrict", args=[DOUBT])
    assert "Use this again" in client.get(url).content.decode()
    assert client.post(url).status_code == 302
    assert MemoryFact.objects.get(subject_id=S, key=DOUBT).restricted_at is None
    assert DOUBT in _agent_keys(agent)["facts"]
    request = PrivacyRequest.objects.get(subject_id=S, kind=RequestKind.RESTRICTION)
    assert request.status == RequestStatus.COMPLETED
    assert request.evidence["outcome"] == "lifted"
    assert [s.action for s in request.steps.all()][-2:] == ["restriction_lifted", "completed"]
    actions = [e.action for e in fact_history(S, DOUBT)]
    assert EventAction.UNRESTRICTED in actions
    assert "You asked the assistant to use it again." in (
        client.get(reverse("portal:requests")).content.decode()
    )


def test_the_note_is_escaped_on_the_portal_pages(facts, signed_in):  # noqa: F811
    client = signed_in(S)
    _stop_in_portal(client)
    for page in (reverse("portal:home"), reverse("portal:fact-unrestrict", args=[DOUBT])):
        assert "<b>middle</b>" not in client.get(page).content.decode()


def test_the_pages_read_naturally_in_chinese(facts, signed_in):  # noqa: F811
    client = signed_in(S, language="zh-hant")
    home = client.get(reverse("portal:home")).content.decode()
    assert "先暫停使用，等你們確認" in home
    client.post(reverse("portal:fact-restrict", args=[DOUBT]), {"note": ""})
    home = client.get(reverse("portal:home")).content.decode()
    assert "我們正在確認這一筆。" in home and "AI 客服目前不會使用。" in home


def test_deleting_a_restricted_fact_answers_its_request(facts, signed_in):  # noqa: F811
    client = signed_in(S)
    _stop_in_portal(client)
    assert client.post(reverse("portal:fact-delete", args=[DOUBT])).status_code == 302
    assert not MemoryFact.objects.filter(subject_id=S, key=DOUBT).exists()
    request = PrivacyRequest.objects.get(subject_id=S, kind=RequestKind.RESTRICTION)
    assert (request.status, request.evidence["outcome"]) == (RequestStatus.COMPLETED, "erased")
    assert "Deleted." in client.get(reverse("portal:requests")).content.decode()
