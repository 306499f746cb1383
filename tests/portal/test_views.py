"""What a traveller can do in the portal, checked by what they (and the agent) then observe."""

from __future__ import annotations

import html
import re
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.utils import timezone
from rest_framework.test import APIClient

from memoryadmin.api.models import Scope
from memoryadmin.api.tokens import token_issue
from memoryadmin.extraction.models import ExtractionJob
from memoryadmin.facts import selectors, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import ActorKind, EventAction, FactEvent, MemoryFact, Subject
from tests.factories import FactFactory, UserFactory
from tests.support.dbscan import occurrences
from tests.support.package import members, memory

from .conftest import A

pytestmark = pytest.mark.django_db


def agent_client(*scopes: str) -> APIClient:
    _, secret = token_issue(name="airline-agent", scopes=scopes or [Scope.MEMORY_READ.value])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def text(response) -> str:
    """The page as a reader sees the words (entities decoded); escaping is tested on raw HTML."""
    return html.unescape(response.content.decode())


# --- see -----------------------------------------------------------------------------------------


def test_facts_are_grouped_in_plain_words_with_where_they_came_from(signed_in):
    FactFactory(
        subject_id=A,
        key="seat_preference",
        value="Prefers aisle seats",
        actor=Actor.extraction("turn"),
    )
    FactFactory(
        subject_id=A,
        key="overnight_flight",
        value="Avoids overnight flights",
        category="constraint",
        actor=Actor.agent("host"),
    )
    FactFactory(
        subject_id=A,
        key="travel_party",
        value="Travels with spouse",
        category="context",
        actor=Actor.staff(UserFactory(username="ops")),
    )
    FactFactory(
        subject_id=A,
        key="home_airport",
        value="Flies from TPE",
        category="context",
        actor=Actor.customer(A),
    )

    body = text(signed_in(A).get("/portal/"))

    assert "The assistant remembers 4 things about you" in body
    sections = re.findall(r'<h2 id="group-[a-z]+">([^<]+)</h2>', body)
    assert sections == ["Your preferences", "Your travel rules", "About you and your trips"]
    assert body.index("Prefers aisle seats") < body.index("Your travel rules")
    assert body.index("Your travel rules") < body.index("Avoids overnight flights")
    assert "Learned from a conversation on" in body
    assert "Saved by the assistant during a chat on" in body
    assert "Added by our support team on" in body
    assert "You added this on" in body
    assert "ops" not in re.sub(r"<[^>]+>", "", body).split()  # staff names stay internal
    assert "seat_preference" not in re.sub(r'href="[^"]*"', "", body)  # no keys shown as text


def test_a_fact_waiting_for_review_and_paused_use_are_said_in_words(signed_in):
    FactFactory(
        subject_id=A,
        key="health_note",
        value="Diabetic, carries insulin",
        actor=Actor.agent("host"),
    )  # held for review by the sensitivity classifier
    client = signed_in(A)
    assert "Waiting for review." in text(client.get("/portal/"))
    assert "Not in use." not in text(client.get("/portal/"))

    services.subject_set_preferences(subject_id=A, memory_use_paused=True, actor=Actor.customer(A))

    assert "Not in use." in text(client.get("/portal/"))


def test_an_empty_memory_says_so(signed_in):
    body = text(signed_in(A).get("/portal/"))
    assert "doesn't remember anything about you right now" in body


def test_fact_values_are_escaped_everywhere(signed_in):
    payload = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'"
    FactFactory(subject_id=A, key="xss", value=payload)
    client = signed_in(A)

    for url in ("/portal/", "/portal/facts/xss/change", "/portal/facts/xss/delete"):
        body = client.get(url).content.decode()
        assert "<script>alert" not in body and "<img src=x" not in body, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body, url


def _many(subject_id: str, count: int, category: str = "preference", prefix: str = "topic") -> None:
    """`count` facts in one batch, numbered in the order they are written."""
    services.fact_upsert(
        subject_id=subject_id,
        facts=[
            services.FactDraft(f"{prefix}_{n}", f"{category.title()} number {n}", category)
            for n in range(count)
        ],
        actor=Actor.system("test"),
    )


@pytest.mark.parametrize("count", [1, 500])
def test_the_overview_needs_a_fixed_number_of_queries(
    signed_in, django_assert_max_num_queries, count
):
    _many(A, count)
    client = signed_in(A)
    client.get("/portal/")  # the session's last-seen time is fresh now
    for url in (
        "/portal/",
        "/portal/?page=25",
        "/portal/forget",
        "/portal/forget/confirm",
        "/portal/facts/topic_0/change",
    ):
        with django_assert_max_num_queries(5):  # + the page's use counts (issue 21)
            assert client.get(url).status_code == 200, url
    # The download also records its access request (request, timeline, policy history), a
    # fixed number of writes whatever the number of facts.
    with django_assert_max_num_queries(20):
        assert client.get("/portal/download").status_code == 200


def cards(body: str) -> list[str]:
    return re.findall(r'<p class="fact-value">([^<]*)</p>', body)


def test_a_long_memory_is_shown_a_page_at_a_time_in_its_groups(signed_in):
    _many(A, 30, "preference", "pref")
    _many(A, 15, "constraint", "rule")
    client = signed_in(A)

    first = text(client.get("/portal/"))
    assert "The assistant remembers 45 things about you" in first
    assert "Showing 1 to 20 of 45" in first
    assert cards(first) == [f"Preference number {n}" for n in range(20)]
    assert 'rel="next"' in first and 'href="?page=2"' in first and 'rel="prev"' not in first
    assert 'aria-current="page">1</a>' in first
    # Every group with facts can be reached from any page; empty ones are not shown.
    count = '</a><span class="count">({})</span>'
    assert 'href="?page=2#group-constraint">Your travel rules' + count.format(15) in first
    assert 'href="/portal/#group-preference">Your preferences' + count.format(30) in first
    assert "About you and your trips" not in first

    second = text(client.get("/portal/", {"page": "2"}))
    assert cards(second) == [f"Preference number {n}" for n in range(20, 30)] + [
        f"Constraint number {n}" for n in range(10)
    ]
    assert '<h2 id="group-preference">Your preferences, continued</h2>' in second
    assert '<h2 id="group-constraint">Your travel rules</h2>' in second
    assert 'rel="prev"' in second and 'rel="next"' in second

    third = text(client.get("/portal/", {"page": "3"}))
    assert cards(third) == [f"Constraint number {n}" for n in range(10, 15)]
    assert "Showing 41 to 45 of 45" in third and 'rel="next"' not in third
    # an empty group is not shown at all (no "Nothing here." in a slanted font)
    assert "About you and your trips" not in third and "Nothing here" not in third
    # What the page offers stays on every page.
    for body in (first, second, third):
        assert "Save my choices" in body and "Download my data" in body
        assert "Forget everything" in body and "Sign out" in body


def test_a_short_memory_has_no_pager(signed_in):
    FactFactory(subject_id=A, key="seat_preference", value="Aisle")
    body = text(signed_in(A).get("/portal/"))
    assert 'class="pagination"' not in body and "Showing" not in body and "Go straight" not in body


@pytest.mark.parametrize(
    ("page", "shown"),
    [
        ("abc", 1),
        ("", 1),
        ("0", 1),
        ("-3", 1),
        ("1e3", 1),
        ("2.5", 1),
        ("３", 3),
        ("999", 3),
        ("9" * 400, 3),
        ("%00", 1),
        (" 2 ", 2),
    ],
)
def test_any_page_number_gets_a_sensible_page_never_an_error(signed_in, page, shown):
    _many(A, 45)
    response = signed_in(A).get("/portal/", {"page": page})
    assert response.status_code == 200
    assert f'aria-current="page">{shown}</a>' in response.content.decode()


def test_changing_or_deleting_from_a_later_page_returns_to_it(signed_in):
    _many(A, 25)
    client = signed_in(A)
    page = text(client.get("/portal/", {"page": "2"}))
    assert 'href="/portal/facts/topic_20/change?page=2"' in page
    assert 'href="/portal/facts/topic_20/delete?page=2"' in page

    form = text(client.get("/portal/facts/topic_20/change?page=2"))
    assert 'href="/portal/?page=2"' in form  # Back and Cancel
    saved = client.post(
        "/portal/facts/topic_20/change?page=2", {"value": "Window seats", "version": 1}
    )
    assert saved.status_code == 302 and saved["Location"] == "/portal/?page=2"

    deleted = client.post("/portal/facts/topic_21/delete?page=2")
    assert deleted.status_code == 302 and deleted["Location"] == "/portal/?page=2"
    assert cards(text(client.get(deleted["Location"]))) == [
        "Window seats",
        *(f"Preference number {n}" for n in range(22, 25)),
    ]
    # Anything but a plain page number returns to the start of the list.
    for junk in ("https://evil.example", "1", "0", "x", "２"):
        form = client.get("/portal/facts/topic_22/change", {"page": junk}).content.decode()
        assert 'href="/portal/"' in form and 'href="/portal/?page=' not in form, junk


def test_pages_carry_no_inline_script_style_or_handlers(signed_in):
    FactFactory(subject_id=A, key="seat_preference", value="Aisle")
    client = signed_in(A)
    for url in (
        "/portal/",
        "/portal/facts/seat_preference/change",
        "/portal/facts/seat_preference/delete",
        "/portal/forget",
        "/portal/forget/confirm",
    ):
        body = text(client.get(url))
        assert "<script" not in body and "<style" not in body and " style=" not in body, url
        assert not re.search(r"\son[a-z]+=", body), url


# --- correct -------------------------------------------------------------------------------------


def test_correcting_a_fact_keeps_its_category_and_records_the_traveller(signed_in):
    FactFactory(
        subject_id=A,
        key="overnight_flight",
        value="Avoids overnight flights",
        category="constraint",
    )
    client = signed_in(A)

    response = client.post(
        "/portal/facts/overnight_flight/change",
        {"value": "Red-eyes only under 5 hours", "version": 1},
    )

    assert response.status_code == 302 and response["Location"] == "/portal/"
    fact = MemoryFact.objects.get(subject_id=A, key="overnight_flight")
    assert (fact.value, fact.category) == ("Red-eyes only under 5 hours", "constraint")
    event = FactEvent.objects.filter(subject_id=A, key="overnight_flight").last()
    assert (event.action, event.actor_kind) == (EventAction.UPDATED, ActorKind.CUSTOMER)
    page = text(client.get("/portal/"))
    assert "Saved. The assistant will use your wording from now on." in page
    assert "Corrected by you on" in page  # who wrote the current words: the traveller


@pytest.mark.parametrize(
    "secret",
    [
        "call 0912 345 678 or jane.doe@example.com",
        # The same, typed on a Chinese keyboard in full-width forms (issue 20).
        "call ０９１２ ３４５ ６７８ or jane.doe＠example．com",
    ],
)
def test_a_blocked_value_is_refused_without_repeating_it(signed_in, secret):
    FactFactory(subject_id=A, key="contact", value="Prefers e-mail")
    client = signed_in(A)

    response = client.post("/portal/facts/contact/change", {"value": secret, "version": 1})

    assert response.status_code == 200
    body = text(response)
    assert "There is a problem" in body
    assert "can't keep card, account, ID or phone numbers" in body
    assert body.count("jane.doe") <= 1  # only inside the textarea, to fix it
    error_zone = body.split("<textarea")[0]
    for part in ("jane.doe", "0912", "０９１２"):
        assert part not in error_zone
    assert MemoryFact.objects.get(subject_id=A, key="contact").value == "Prefers e-mail"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"value": "", "version": 1}, "Write what the assistant should remember"),
        ({"value": "x" * 201, "version": 1}, "Keep it under 200 characters"),
        ({"value": "ok", "version": "nope"}, "There is a problem"),
        ({"value": "\u200b\u200b", "version": 1}, "Write a few words"),
    ],
)
def test_bad_input_is_a_form_error_not_a_500(signed_in, data, message):
    FactFactory(subject_id=A, key="seat_preference", value="Aisle")
    response = signed_in(A).post("/portal/facts/seat_preference/change", data)
    assert response.status_code == 200
    assert message in text(response)
    assert MemoryFact.objects.get(subject_id=A).value == "Aisle"


def test_a_stale_form_is_refused_with_the_current_version_to_save_again(signed_in):
    FactFactory(subject_id=A, key="seat_preference", value="Aisle")
    client = signed_in(A)
    services.fact_edit(
        subject_id=A,
        key="seat_preference",
        value="Window",
        expected_version=1,
        actor=Actor.agent("host"),
    )

    response = client.post(
        "/portal/facts/seat_preference/change", {"value": "Aisle please", "version": 1}
    )

    assert response.status_code == 200
    assert "changed somewhere else" in text(response)
    assert 'name="version" value="2"' in text(response)
    assert MemoryFact.objects.get(subject_id=A).value == "Window"


# --- delete --------------------------------------------------------------------------------------


@pytest.mark.parametrize("prepared", [True, False], ids=["on", "DATABASE_PREPARED_WRITES-off"])
def test_deleting_asks_first_then_erases(signed_in, prepared, settings):
    settings.DATABASE_PREPARED_WRITES = prepared
    value = "Prefers seat 31K Zq7"
    FactFactory(subject_id=A, key="seat_preference", value=value)
    client = signed_in(A)

    confirm = client.get("/portal/facts/seat_preference/delete")
    assert "Delete this?" in text(confirm) and value in text(confirm)
    assert MemoryFact.objects.filter(subject_id=A).exists()

    response = client.post("/portal/facts/seat_preference/delete")

    assert response.status_code == 302
    assert occurrences(value) == {}
    event = FactEvent.objects.filter(subject_id=A, action=EventAction.DELETED).get()
    assert event.actor_kind == ActorKind.CUSTOMER
    assert "Deleted. The assistant no longer remembers it." in text(client.get("/portal/"))


# --- switches ------------------------------------------------------------------------------------


def test_pausing_learning_skips_posted_turns(signed_in):
    client = signed_in(A)
    response = client.post("/portal/choices", {"use": "on"})  # learn unticked
    assert response.status_code == 302

    turns = agent_client(Scope.TURNS_WRITE.value)
    posted = turns.post(
        f"/api/v1/subjects/{A}/turns",
        {
            "session_id": "s-1",
            "turn_id": "t-1",
            "messages": [{"role": "user", "text": "I always want an aisle seat"}],
        },
        format="json",
    )

    assert posted.status_code == 202
    assert posted.json()["status"] == "skipped"
    job = ExtractionJob.objects.get(public_id=posted.json()["job_id"])
    assert "paused learning" in job.reason
    event = FactEvent.objects.get(subject_id=A, action=EventAction.PREFERENCES_CHANGED)
    assert event.actor_kind == ActorKind.CUSTOMER
    assert event.after == {"memory_paused": True, "memory_use_paused": False}
    assert "won't learn anything new" in text(client.get("/portal/"))


def test_pausing_use_empties_the_agents_reads_and_keeps_the_facts(signed_in):
    FactFactory(
        subject_id=A, key="overnight_flight", value="Avoids red-eyes", category="constraint"
    )
    client = signed_in(A)
    agent = agent_client()

    client.post("/portal/choices", {"learn": "on"})  # use unticked

    for tail in ("facts", "tier-one", "facts/search?q=red", "facts/overnight_flight"):
        response = agent.get(f"/api/v1/subjects/{A}/{tail}")
        assert response.status_code in {200, 404}
        if response.status_code == 200:
            assert response.json() == {"facts": []}, tail
    assert MemoryFact.objects.filter(subject_id=A).count() == 1
    assert "Not in use." in text(client.get("/portal/"))

    client.post("/portal/choices", {"learn": "on", "use": "on"})
    assert len(agent.get(f"/api/v1/subjects/{A}/facts").json()["facts"]) == 1


def test_the_switches_show_their_state(signed_in):
    services.subject_set_preferences(subject_id=A, memory_paused=True, actor=Actor.customer(A))
    body = text(signed_in(A).get("/portal/"))
    learn = re.search(r'<input type="checkbox" name="learn"[^>]*>', body).group(0)
    use = re.search(r'<input type="checkbox" name="use"[^>]*>', body).group(0)
    assert "checked" not in learn and "checked" in use


# --- export --------------------------------------------------------------------------------------


def test_download_my_data_has_facts_history_with_erased_values_and_switches(signed_in):
    FactFactory(subject_id=A, key="seat_preference", value="Prefers aisle seats")
    FactFactory(subject_id=A, key="meal", value="Erased meal Kx9")
    services.fact_delete(subject_id=A, key="meal", actor=Actor.customer(A))
    services.subject_set_preferences(subject_id=A, memory_paused=True, actor=Actor.customer(A))
    FactFactory(subject_id="FF-OTHER", key="seat_preference", value="Someone else")

    response = signed_in(A).get("/portal/download")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    taipei = ZoneInfo(settings.TIME_ZONE)  # the airline's one zone
    day = timezone.localdate(timezone=taipei).isoformat()
    assert response["Content-Disposition"] == f'attachment; filename="memory-{A}-{day}.zip"'
    data = memory(response.content)
    assert [(f["key"], f["value"]) for f in data["facts"]] == [
        ("seat_preference", "Prefers aisle seats")
    ]
    # the switches: fixed member names, the portal's own words beside each state
    assert data["switches"] == {
        "learn_from_conversations": {"label": "Learn from my conversations", "on": False},
        "use_memory": {"label": "Let the assistant use what it remembers", "on": True},
    }
    whats = [event["what"] for event in data["history"]]
    assert "a fact you deleted" in whats  # its entry's own time says when, once
    assert not any(
        event.get("fact") == "erased" or event.get("before") == "erased"
        for event in data["history"]
    )
    deleted = next(e for e in data["history"] if e["what"].startswith("a fact you deleted"))
    assert "fact" not in deleted and deleted["why"] == "you did this in the privacy portal"
    seat = next(e for e in data["history"] if e.get("fact") == "seat_preference")
    assert seat["why"] == "done automatically by our system"  # FactFactory writes as system
    everything = "".join(member.decode() for member in members(response.content).values())
    assert "turn" not in members(response.content)["memory.json"].decode()
    assert "Kx9" not in everything
    assert "Someone else" not in everything


# --- forget everything ---------------------------------------------------------------------------


def test_forget_everything_takes_two_steps_and_gives_a_receipt_staff_can_find(signed_in):
    values = ["Prefers aisle seats Qx1", "Avoids overnight flights Qx2"]
    FactFactory(subject_id=A, key="seat_preference", value=values[0])
    FactFactory(subject_id=A, key="overnight_flight", value=values[1], category="constraint")
    services.fact_edit(
        subject_id=A,
        key="seat_preference",
        value="Aisle seats Qx3",
        expected_version=1,
        actor=Actor.customer(A),
    )
    agent = agent_client()
    before = selectors.purge_generation(A)
    client = signed_in(A)

    step_one = text(client.get("/portal/forget"))
    assert "What will be deleted" in step_one and "What stays" in step_one
    assert "All 2 things the assistant remembers about you" in step_one
    refused = client.post("/portal/forget/confirm", {})
    assert refused.status_code == 200 and "Tick the box" in text(refused)
    assert MemoryFact.objects.filter(subject_id=A).count() == 2

    done = client.post("/portal/forget/confirm", {"confirm": "on"})

    assert done.status_code == 302
    receipt_page = client.get(done["Location"])
    body = text(receipt_page)
    number = re.search(r'class="receipt-number reference">(R-[0-9A-Z-]+)<', body).group(1)
    assert "All 2 things the assistant remembered about you" in body
    # erasure proof: no old value anywhere, the agent sees nothing, the generation went up
    for value in [*values, "Aisle seats Qx3"]:
        assert occurrences(value) == {}, value
    assert agent.get(f"/api/v1/subjects/{A}/facts").json() == {"facts": []}
    assert selectors.purge_generation(A) == before + 1
    # the receipt is itself the audit event, and can be looked up by its number
    event = FactEvent.objects.get(subject_id=A, action=EventAction.SUBJECT_CLEARED)
    assert event.actor_kind == ActorKind.CUSTOMER
    assert event.after["receipt"] == number and event.after["facts_deleted"] == 2
    found = selectors.clear_receipt_get(number.lower())
    assert (found.subject_id, found.facts_erased) == (A, 2)
    assert Subject.objects.get(subject_id=A).purge_generation == before + 1


def test_memory_switched_off_by_the_airline_is_said(signed_in):
    from memoryadmin.facts.models import MemorySettings

    def memory_enabled(on: bool) -> None:
        MemorySettings.objects.update_or_create(pk=1, defaults={"memory_enabled": on})
        selectors.memory_config_invalidate()

    FactFactory(subject_id=A, key="seat_preference", value="Aisle")
    client = signed_in(A)
    try:
        memory_enabled(True)
        assert "switched the assistant's memory off" not in text(client.get("/portal/"))
        memory_enabled(False)
        assert "switched the assistant's memory off" in text(client.get("/portal/"))
    finally:
        memory_enabled(True)
