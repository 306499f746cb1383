"""Reviewers mark the sample: each mark an event in the fact's history, a reason for a wrong
one, a sensitive value marked only after the reviewer revealed it, viewers refused."""

from __future__ import annotations

import pytest
from django.test import Client

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactInvalid, FactStateError
from memoryadmin.facts.models import EventAction, FactEvent
from memoryadmin.quality.models import QualitySampleItem
from memoryadmin.quality.services import quality_mark_record, quality_sample_draw
from memoryadmin.staff.roles import EDITOR, VIEWER
from tests.quality.conftest import learn
from tests.staff.conftest import make_staff

pytestmark = pytest.mark.django_db
SAMPLE_PAGE = "/staff/quality/sample/"


def mark_url(item: QualitySampleItem) -> str:
    return f"/staff/quality/sample/{item.pk}/mark/"


def post_mark(client: Client, item: QualitySampleItem, mark: str, reason: str = ""):
    return client.post(
        mark_url(item), {f"q{item.pk}-mark": mark, f"q{item.pk}-reason": reason}, follow=True
    )


@pytest.fixture
def editor_client() -> Client:
    client = Client()
    client.force_login(make_staff("quinn", EDITOR))
    return client


def test_a_mark_is_an_event_in_the_facts_history(editor_client):
    learn("FF-MK-1", "seat_preference", "Prefers an aisle seat")
    item = quality_sample_draw(actor=Actor.system("test")).items.get()
    body = post_mark(editor_client, item, "wrong", "inference").content.decode()
    assert "Marked. The mark is in the fact" in body
    item.refresh_from_db()
    assert (item.mark, item.reason, item.marked_by.username) == ("wrong", "inference", "quinn")
    event = FactEvent.objects.get(subject_id="FF-MK-1", action=EventAction.QUALITY_MARKED)
    assert event.reason == "Marked wrong in the quality sample: The model's inference"
    assert (event.actor_kind, event.actor_label, event.after) == ("staff", "quinn", None)
    # The history reads it in words, and the fact's version line is not the mark.
    page = editor_client.get("/staff/travellers/FF-MK-1/facts/seat_preference/").content.decode()
    assert "Quality checked" in page and "Marked wrong in the quality sample" in page
    assert "quality_marked</span>" not in page


def test_wrong_needs_one_reason_from_the_list(editor_client):
    learn("FF-MK-2", "seat_preference", "Prefers an aisle seat")
    item = quality_sample_draw(actor=Actor.system("test")).items.get()
    body = post_mark(editor_client, item, "wrong").content.decode()
    assert "Not marked: choose why it is wrong" in body
    body = post_mark(editor_client, item, "").content.decode()
    assert "Not marked: choose Correct or Wrong." in body
    # Nothing is chosen in advance for an unmarked fact.
    assert " checked" not in editor_client.get(SAMPLE_PAGE).content.decode()
    with pytest.raises(FactInvalid):
        quality_mark_record(
            actor=Actor.staff(item.sample.drawn_by_user or make_staff("r", EDITOR)),
            item=item,
            mark="wrong",
            reason="made_up",
        )
    item.refresh_from_db()
    assert item.mark == ""
    assert not FactEvent.objects.filter(action=EventAction.QUALITY_MARKED).exists()


def test_a_sensitive_value_is_masked_and_marked_only_after_a_reveal(editor_client):
    learn("FF-MK-3", "mobility", "Uses a wheelchair at airports", "context")
    services.fact_flag_sensitive(subject_id="FF-MK-3", key="mobility", actor=Actor.system("t"))
    item = quality_sample_draw(actor=Actor.system("test")).items.get()
    page = editor_client.get(SAMPLE_PAGE).content.decode()
    assert "Uses a wheelchair" not in page and "Reveal the value to mark it" in page
    body = post_mark(editor_client, item, "correct").content.decode()
    assert "Not marked: Reveal the value before you mark it" in body
    item.refresh_from_db()
    assert item.mark == ""
    editor_client.post(
        "/staff/travellers/FF-MK-3/facts/mobility/reveal/",
        {"reason": "quality sample", "next": SAMPLE_PAGE},
    )
    page = editor_client.get(SAMPLE_PAGE).content.decode()
    assert "Uses a wheelchair at airports" in page
    post_mark(editor_client, item, "correct")
    item.refresh_from_db()
    assert item.mark == "correct"
    actions = list(
        FactEvent.objects.filter(subject_id="FF-MK-3")
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions[-2:] == [EventAction.VALUE_REVEALED, EventAction.QUALITY_MARKED]


def test_the_service_refuses_a_sensitive_value_nobody_revealed():
    learn("FF-MK-4", "mobility", "Uses a wheelchair at airports", "context")
    services.fact_flag_sensitive(subject_id="FF-MK-4", key="mobility", actor=Actor.system("t"))
    item = quality_sample_draw(actor=Actor.system("test")).items.get()
    with pytest.raises(FactStateError, match="Reveal the value"):
        quality_mark_record(
            actor=Actor.staff(make_staff("rita", EDITOR)), item=item, mark="correct"
        )


def test_viewers_and_strangers_are_refused(client):
    learn("FF-MK-5", "seat_preference", "Prefers an aisle seat")
    item = quality_sample_draw(actor=Actor.system("test")).items.get()
    for path in ("/staff/quality/", SAMPLE_PAGE):
        assert client.get(path).status_code == 302  # to the sign-in page
    client.force_login(make_staff("val", VIEWER))
    for path in ("/staff/quality/", SAMPLE_PAGE):
        assert client.get(path).status_code == 403
    assert post_mark(client, item, "correct").status_code == 403
    assert client.post("/staff/quality/sample/draw/").status_code == 403
    item.refresh_from_db()
    assert item.mark == ""
    assert "Memory quality" not in client.get("/staff/").content.decode()


def test_an_erased_fact_leaves_an_anonymous_mark_that_still_counts(editor_client):
    learn("FF-MK-6", "seat_preference", "Prefers an aisle seat")
    learn("FF-MK-7", "zqx_meal_habit", "Vegetarian by choice")
    sample = quality_sample_draw(actor=Actor.system("test"))
    items = {i.subject_id: i for i in sample.items.all()}
    post_mark(editor_client, items["FF-MK-6"], "wrong", "one_off")
    post_mark(editor_client, items["FF-MK-7"], "correct")
    services.fact_delete(subject_id="FF-MK-6", key="seat_preference", actor=Actor.system("t"))
    services.subject_forget(subject_id="FF-MK-7", actor=Actor.customer("FF-MK-7"))
    for item in items.values():
        item.refresh_from_db()
        assert (item.fact_id, item.subject_id, item.key_hash) == (None, "", "")
        assert item.erased_at is not None and item.mark
    page = editor_client.get(SAMPLE_PAGE).content.decode()
    assert page.count("Erased since the draw") == 2
    assert "FF-MK-6" not in page and "zqx_meal_habit" not in page
    quality = editor_client.get("/staff/quality/").content.decode()
    assert "correct of 2 marked" in quality
    # Marking an erased fact again is refused: there is no history left to write to.
    body = post_mark(editor_client, items["FF-MK-6"], "correct").content.decode()
    assert "Not marked: This fact was erased after the draw" in body
