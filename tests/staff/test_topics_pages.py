"""Issue 32 on the staff pages: a fact is headed by its topic ("Seat preference") with the key
beside it in small code, and the origin says who wrote the current value when a person did."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import MemoryFact
from memoryadmin.facts.services import FactDraft
from tests.factories import UserFactory
from tests.staff.conftest import editor  # noqa: F401

pytestmark = pytest.mark.django_db
T = "T-TOPIC-1"
HEADING = 'Seat preference</a> <code class="fact-key">seat_preference</code>'


def _text(response) -> str:
    body = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", response.content.decode(), flags=re.S)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))


def _learned(*drafts: FactDraft) -> None:
    services.fact_upsert(subject_id=T, facts=list(drafts), actor=Actor.extraction("job 1"))


def _edit(key: str, value: str, actor: Actor) -> None:
    fact = MemoryFact.objects.get(subject_id=T, key=key)
    services.fact_edit(
        subject_id=T, key=key, value=value, expected_version=fact.version, actor=actor
    )


def test_the_traveller_page_heads_each_fact_with_its_topic_and_says_who_wrote_it(
    client,
    editor,  # noqa: F811
    django_assert_max_num_queries,
):
    _learned(
        FactDraft("seat_preference", "Prefers aisle seats"),
        FactDraft("meal_preference", "Vegetarian meals"),
        FactDraft("lounge_access_notes", "Likes a quiet lounge"),
        FactDraft("home_airport", "TPE"),
    )
    _edit("seat_preference", "Prefers window seats", Actor.customer(T))
    mei = UserFactory(username="mlin", first_name="Mei", last_name="Lin")
    _edit("meal_preference", "Vegan meals", Actor.staff(mei))
    client.force_login(editor)

    with django_assert_max_num_queries(12):  # as before: the labels cost no query
        response = client.get(f"/staff/travellers/{T}/")
    body = response.content.decode()
    assert '<th scope="col">Topic</th>' in body
    assert HEADING in body
    assert 'Meal preference</a> <code class="fact-key">meal_preference</code>' in body
    # a key outside the catalogue is made readable, and still shown as it is
    assert 'Lounge access notes</a> <code class="fact-key">lounge_access_notes</code>' in body
    text = _text(response)
    assert re.search(r"Corrected by the traveller on \d{1,2} \w{3} \d{4}", text)
    assert re.search(r"Edited by Mei Lin on \d{1,2} \w{3} \d{4}", text)
    assert "Learned from a conversation" in text  # home_airport: nobody rewrote it
    assert "traveller:" not in text  # the traveller's id is not how the origin reads


def test_the_fact_page_and_its_history_head_with_the_topic(client, editor):  # noqa: F811
    _learned(FactDraft("seat_preference", "Prefers aisle seats"))
    _edit("seat_preference", "Window", Actor.staff(UserFactory(username="ops.two")))
    client.force_login(editor)

    page = client.get(f"/staff/travellers/{T}/facts/seat_preference/")
    body = page.content.decode()
    assert '<h1>Seat preference <code class="fact-key">seat_preference</code></h1>' in body
    assert re.search(r"Origin Edited by ops\.two on \d{1,2} \w{3} \d{4}", _text(page))
    timeline = client.get(f"/staff/travellers/{T}/timeline/").content.decode()
    assert HEADING in timeline
    edit = client.get(f"/staff/travellers/{T}/facts/seat_preference/edit/").content.decode()
    assert 'Edit Seat preference <code class="fact-key">seat_preference</code>' in edit


def test_the_review_queue_the_as_of_view_and_the_bulk_confirmation_head_with_the_topic(
    client,
    editor,  # noqa: F811
):
    _learned(
        FactDraft("seat_preference", "Prefers aisle seats"),
        FactDraft("mobility_assistance", "Needs a wheelchair at the gate", "constraint"),
    )
    assert MemoryFact.objects.get(subject_id=T, key="mobility_assistance").status == (
        "pending_review"
    )
    client.force_login(editor)

    review = client.get("/staff/review/").content.decode()
    assert 'Mobility assistance</a> <code class="fact-key">mobility_assistance</code>' in review
    at = timezone.localtime(timezone.now() + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M")
    as_of = client.get(f"/staff/travellers/{T}/as-of/", {"at": at}).content.decode()
    assert 'Seat preference <code class="fact-key">seat_preference</code>' in as_of
    confirm = client.post(
        f"/staff/travellers/{T}/bulk/",
        {"keys": ["seat_preference"], "action": "expire", "reason": "asked"},
    ).content.decode()
    assert (
        '<th scope="row">Seat preference <code class="fact-key">seat_preference</code></th>'
        in confirm
    )


def test_a_key_that_reads_as_itself_is_shown_once(client, editor):  # noqa: F811
    _learned(FactDraft("座位偏好", "靠走道"))
    client.force_login(editor)
    body = client.get(f"/staff/travellers/{T}/").content.decode()
    assert "座位偏好</a>" in body
    assert '<code class="fact-key">座位偏好</code>' not in body


def test_the_fact_pages_titles_name_the_topic_not_the_key(client, editor):  # noqa: F811
    """The browser tab and the history list read "Seat preference", as the heading does."""
    _learned(FactDraft("seat_preference", "Prefers aisle seats"))
    client.force_login(editor)
    fact = f"/staff/travellers/{T}/facts/seat_preference/"
    for url in (fact, fact + "edit/", fact + "expiry/", fact + "delete/"):
        response = client.get(url)
        assert response.status_code == 200, url
        [title] = re.findall(r"<title>(.*?)</title>", response.content.decode(), flags=re.S)
        assert "Seat preference" in title, (url, title)
        assert "seat_preference" not in title, (url, title)
