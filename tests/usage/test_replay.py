"""Turn replay (issue 33): the staff turn view shows each fact as the agent had it in the turn
(its value at the receipt's version, from the history snapshots), marks what changed since
("now: …") and what went; an erased value stays erased, on the page and in the database."""

from __future__ import annotations

import pytest

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.services import FactDraft
from memoryadmin.facts.validation import session_tag
from memoryadmin.usage.services import TurnUse, uses_record
from tests.support.pgdump import pg_dump_text

T = "T-REPLAY-1"
HAD = "Window seat, row 30 or later"
NOW = "Aisle seat near the front"
URL = f"/staff/travellers/{T}/turns/{session_tag('sess-R')}/t-1/"


def _save(value: str, actor: Actor) -> None:
    services.fact_upsert(subject_id=T, actor=actor, facts=[FactDraft("seat_preference", value)])


def _a_turn_with_the_window_seat() -> None:
    _save(HAD, Actor.extraction("job 1"))
    services.fact_upsert(
        subject_id=T, actor=Actor.agent("host-1"), facts=[FactDraft("meal", "Vegetarian")]
    )
    uses_record(
        subject_id=T,
        uses=[
            TurnUse(
                "sess-R",
                "t-1",
                injected=[{"key": "seat_preference", "version": 1}],
                recalled=["meal"],
            )
        ],
    )


@pytest.mark.django_db(transaction=True)
def test_the_turn_view_shows_the_value_the_agent_had_and_an_erased_one_nowhere(
    client, editor, django_assert_max_num_queries
):
    _a_turn_with_the_window_seat()
    client.force_login(editor)
    before = client.get(URL).content.decode()
    assert HAD in before and "Changed" not in before

    _save(NOW, Actor.customer(T))  # the traveller corrects it after the turn
    with django_assert_max_num_queries(12):
        body = client.get(URL).content.decode()
    given, recalled = body.split("Recalled by a memory tool")
    assert HAD in given  # what the agent had, not what the fact says now
    assert "Changed" in given and f'now: <span class="value">{NOW}</span>' in given
    assert "Vegetarian" in recalled and "The agent host did not name the version" in recalled
    assert body.count("did not name the version") == 1  # one note under the table, not per row

    services.fact_delete(subject_id=T, key="seat_preference", actor=Actor.customer(T))
    response = client.get(URL)
    after = response.content.decode()
    assert response.status_code == 200  # the turn keeps its receipt, as a tombstone
    given = after.split("Recalled by a memory tool")[0]
    assert "A fact used in this turn was erased on" in given
    assert "did not report" not in after
    assert HAD not in after and NOW not in after and "seat_preference" not in given
    dump = pg_dump_text()
    assert HAD not in dump and NOW not in dump and "seat_preference" not in dump


@pytest.mark.django_db
def test_a_value_erased_from_the_history_is_never_shown(client, editor):
    """If a receipt outlives its version's snapshot being blanked, the page says the fact was
    erased and when, never the old value."""
    from memoryadmin.facts.models import FactEvent

    _a_turn_with_the_window_seat()
    _save(NOW, Actor.customer(T))
    from django.utils import timezone

    FactEvent.objects.filter(subject_id=T, key="seat_preference").update(
        before=None, after={"version": 1}, redacted_at=timezone.now()
    )
    client.force_login(editor)
    body = client.get(URL).content.decode()
    assert "A fact used in this turn was erased on" in body
    assert HAD not in body and NOW not in body


@pytest.mark.django_db
def test_a_sensitive_value_the_agent_had_is_masked_until_revealed(client, editor):
    _a_turn_with_the_window_seat()
    _save(NOW, Actor.customer(T))
    services.fact_flag_sensitive(subject_id=T, key="seat_preference", actor=Actor.staff(editor))
    client.force_login(editor)
    body = client.get(URL).content.decode()
    assert HAD not in body and NOW not in body and "masked until revealed" in body


@pytest.mark.django_db
@pytest.mark.parametrize(
    "language, earlier",
    [
        ("en", "In that chat the assistant had an earlier version: “"),
        ("zh-hant", "那次對話時，AI 客服用的還是之前的內容：「"),
    ],
)
def test_the_portal_card_says_what_the_assistant_had_in_that_chat(
    signed_in, language, earlier, django_assert_max_num_queries
):
    _a_turn_with_the_window_seat()
    client = signed_in(T, language=language)
    assert earlier not in client.get("/portal/").content.decode()  # unchanged since
    _save(NOW, Actor.customer(T))
    with django_assert_max_num_queries(9):
        body = client.get("/portal/").content.decode()
    assert f"{earlier}{HAD}" in body and NOW in body
    services.fact_delete(subject_id=T, key="seat_preference", actor=Actor.customer(T))
    body = client.get("/portal/").content.decode()
    assert HAD not in body and NOW not in body


@pytest.mark.django_db
@pytest.mark.parametrize(
    "language, erased",
    [
        ("en", "What the assistant had in that chat was erased on"),
        ("zh-hant", "那次對話時 AI 客服用的內容，已於"),
    ],
)
def test_the_portal_card_says_an_erased_version_was_erased_never_its_words(
    signed_in, language, erased
):
    """The version the assistant had in its last chat was blanked from the history: the card
    says so in the traveller's words, and shows neither that value nor a made-up one."""
    from django.utils import timezone

    from memoryadmin.facts.models import FactEvent

    _a_turn_with_the_window_seat()
    _save(NOW, Actor.customer(T))
    FactEvent.objects.filter(subject_id=T, key="seat_preference", after__version=1).update(
        after={"version": 1}, redacted_at=timezone.now()
    )
    body = signed_in(T, language=language).get("/portal/").content.decode()
    assert erased in body and HAD not in body and NOW in body


@pytest.mark.django_db
def test_after_forget_everything_the_turn_says_so_not_that_it_was_never_reported(client, editor):
    _a_turn_with_the_window_seat()
    services.subject_forget(subject_id=T, actor=Actor.customer(T))
    client.force_login(editor)
    response = client.get(URL)
    body = response.content.decode()
    assert response.status_code == 404
    assert "the traveller asked us to forget everything, which took every receipt with it" in body
