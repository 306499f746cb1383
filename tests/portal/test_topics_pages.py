"""Issue 32 in the portal: a fact reads as its topic in the traveller's language, never as its
key, and the card says who wrote the current words when a person rewrote them."""

from __future__ import annotations

import re

import pytest

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import MemoryFact
from memoryadmin.facts.services import FactDraft
from tests.factories import UserFactory

from .conftest import A

pytestmark = pytest.mark.django_db

CORRECTED = {
    "en": r'Corrected by you on <time datetime="[^"]+">\d{1,2} [A-Z][a-z]+ 2\d{3}</time>',
    "zh-TW": r'您於<time datetime="[^"]+">2\d{3}年\d{1,2}月\d{1,2}日</time>更正',
}
SEAT = {"en": "Seat preference", "zh-TW": "座位偏好"}


def _words(body: str) -> str:
    """What a reader sees: the text without tags and their attributes (links carry the key)."""
    return re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", body, flags=re.S))


@pytest.mark.parametrize("language", ["en", "zh-TW"])
def test_a_catalogue_key_reads_as_its_topic_and_never_as_the_key(signed_in, language):
    services.fact_upsert(
        subject_id=A,
        facts=[
            FactDraft("seat_preference", "Prefers aisle seats"),
            FactDraft("overnight_flight", "Avoids overnight flights", "constraint"),
        ],
        actor=Actor.extraction(),
    )
    body = signed_in(A, language=language).get("/portal/").content.decode()
    assert f'<h3 class="topic">{SEAT[language]}</h3>' in body
    words = _words(body)
    assert "seat_preference" not in words and "overnight_flight" not in words
    assert "fact-key" not in body  # the key in code is for staff only


@pytest.mark.parametrize("language", ["en", "zh-TW"])
def test_the_card_says_the_traveller_corrected_it_until_the_assistant_rewrites_it(
    signed_in, language
):
    services.fact_upsert(
        subject_id=A, facts=[FactDraft("seat_preference", "Prefers aisle seats")],
        actor=Actor.extraction(),
    )  # fmt: skip
    client = signed_in(A, language=language)
    response = client.post(
        "/portal/facts/seat_preference/change", {"value": "Window, please", "version": 1}
    )
    assert response.status_code == 302
    assert re.search(CORRECTED[language], client.get("/portal/").content.decode())

    services.fact_upsert(
        subject_id=A, facts=[FactDraft("seat_preference", "Aisle again")], actor=Actor.extraction()
    )
    assert not re.search(CORRECTED[language], client.get("/portal/").content.decode())


def test_a_staff_correction_reads_as_the_support_team_never_by_name(signed_in):
    services.fact_upsert(
        subject_id=A, facts=[FactDraft("seat_preference", "Prefers aisle seats")],
        actor=Actor.extraction(),
    )  # fmt: skip
    staff = Actor.staff(UserFactory(username="mlin", first_name="Mei", last_name="Lin"))
    services.fact_edit(
        subject_id=A, key="seat_preference", value="Window", expected_version=1, actor=staff
    )
    assert MemoryFact.objects.get(subject_id=A).rewritten_by_label == "Mei Lin"
    body = signed_in(A).get("/portal/").content.decode()
    assert "Corrected by our support team on" in body
    assert "Mei Lin" not in body and "mlin" not in body
