"""Memory as of a date (issue 33): editors see the traveller's memory as it stood at a moment,
rebuilt from the history: values then, tier one then, erased values as erased; each look on the
access record; a fixed number of queries whatever the history's size."""

from __future__ import annotations

import re
from datetime import UTC, timedelta

import pytest
from django.utils import timezone

from memoryadmin.access.models import StaffAccess
from memoryadmin.facts import selectors as fact_selectors
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent
from memoryadmin.facts.services import FactDraft, policy

pytestmark = pytest.mark.django_db
T = "T-ASOF-1"
URL = f"/staff/travellers/{T}/as-of/"
BEFORE = "Window seat zq-before"
AFTER = "Aisle seat zq-after"


def _at(moment) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%dT%H:%M")


def _history():
    """seat learned 10 days ago, corrected by the traveller 5 days ago; meal learned 10 days
    ago. The events' times are set as the history would have them."""
    now = timezone.now()
    services.fact_upsert(
        subject_id=T,
        actor=Actor.extraction("job 1"),
        facts=[FactDraft("seat_preference", BEFORE), FactDraft("meal", "Vegetarian zq-meal")],
    )
    FactEvent.objects.filter(subject_id=T).update(created_at=now - timedelta(days=10))
    services.fact_upsert(
        subject_id=T, actor=Actor.customer(T), facts=[FactDraft("seat_preference", AFTER)]
    )
    FactEvent.objects.filter(subject_id=T, created_at__gt=now - timedelta(days=1)).update(
        created_at=now - timedelta(days=5)
    )
    return now


def test_before_and_after_a_correction_differ_as_the_history_says(
    client, editor, django_assert_max_num_queries
):
    now = _history()
    client.force_login(editor)
    before_count = StaffAccess.objects.count()
    with django_assert_max_num_queries(10):
        then = client.get(URL, {"at": _at(now - timedelta(days=7))})
    assert then.status_code == 200
    then = then.content.decode()
    later = client.get(URL, {"at": _at(now - timedelta(days=1))}).content.decode()
    assert BEFORE in then and AFTER not in then
    assert AFTER in later and BEFORE not in later
    assert "zq-meal" in then and "zq-meal" in later
    assert "2 facts, 2 in tier one" in then
    earlier = client.get(URL, {"at": _at(now - timedelta(days=20))}).content.decode()
    assert "No facts at that moment" in earlier
    looks = list(StaffAccess.objects.order_by("id"))[before_count:]
    assert [row.what for row in looks] == ["as_of"] * 3


def test_the_query_count_does_not_grow_with_the_history(
    client, editor, django_assert_max_num_queries
):
    _history()
    for n in range(30):
        services.fact_upsert(
            subject_id=T, actor=Actor.agent("h"), facts=[FactDraft(f"note_{n}", f"v{n}")]
        )
    client.force_login(editor)
    with django_assert_max_num_queries(10):
        assert client.get(URL, {"at": _at(timezone.now())}).status_code == 200


def test_an_erased_fact_shows_as_erased_never_its_value(client, editor):
    now = _history()
    services.fact_delete(subject_id=T, key="seat_preference", actor=Actor.customer(T))
    client.force_login(editor)
    body = client.get(URL, {"at": _at(now - timedelta(days=7))}).content.decode()
    assert "This fact was erased on" in body
    assert BEFORE not in body and AFTER not in body and "seat_preference" not in body
    assert "zq-meal" in body
    # after the erasure it is simply gone
    body = client.get(URL, {"at": _at(timezone.now())}).content.decode()
    assert "seat_preference" not in body and "was erased on" not in body and "zq-meal" in body
    # the future is refused with a message
    assert client.get(URL, {"at": _at(now + timedelta(days=3))}).status_code == 400


def test_a_bad_date_is_a_form_error_and_viewers_are_refused(client, editor, viewer):
    _history()
    client.force_login(editor)
    response = client.get(URL, {"at": "not a date"})
    assert response.status_code == 400 and "Give a date and time" in response.content.decode()
    assert not StaffAccess.objects.filter(what="as_of").exists()
    client.force_login(viewer)
    assert client.get(URL, {"at": "2026-01-01T10:00"}).status_code == 403
    page = client.get(f"/staff/travellers/{T}/").content.decode()
    assert "Memory as of" not in page


def test_a_fact_erased_then_learned_again_reads_as_the_history_says(client, editor):
    """Learned 10 days ago, erased 6 days ago, learned again 3 days ago: erased as of 8 days
    ago (never its old value), gone as of 5 days ago, the new value as of yesterday and not
    marked erased (the erasure was of the earlier fact)."""
    now = timezone.now()
    services.fact_upsert(
        subject_id=T, actor=Actor.extraction("job 1"), facts=[FactDraft("seat_preference", BEFORE)]
    )
    FactEvent.objects.filter(subject_id=T).update(created_at=now - timedelta(days=10))
    services.fact_delete(subject_id=T, key="seat_preference", actor=Actor.customer(T))
    FactEvent.objects.filter(subject_id=T, created_at__gt=now - timedelta(days=1)).update(
        created_at=now - timedelta(days=6)
    )
    services.fact_upsert(
        subject_id=T, actor=Actor.customer(T), facts=[FactDraft("seat_preference", AFTER)]
    )
    FactEvent.objects.filter(subject_id=T, created_at__gt=now - timedelta(days=1)).update(
        created_at=now - timedelta(days=3)
    )
    client.force_login(editor)

    erased = client.get(URL, {"at": _at(now - timedelta(days=8))}).content.decode()
    assert "This fact was erased on" in erased and BEFORE not in erased and AFTER not in erased
    gone = client.get(URL, {"at": _at(now - timedelta(days=5))}).content.decode()
    assert "No facts at that moment." in gone and "0 facts" in gone
    again = client.get(URL, {"at": _at(now - timedelta(days=1))}).content.decode()
    assert AFTER in again and BEFORE not in again
    assert "erased since" not in again and "This fact was erased" not in again


def test_a_long_memory_is_shown_a_page_at_a_time_keeping_the_moment(client, editor):
    services.fact_upsert(
        subject_id=T,
        actor=Actor.extraction("job 1"),
        facts=[FactDraft(f"note_{n:02d}", f"Value zq-{n:02d}") for n in range(60)],
    )
    client.force_login(editor)
    at = _at(timezone.now() + timedelta(minutes=1))
    first = client.get(URL, {"at": at}).content.decode()
    assert "60 facts" in first and "1–50 of 60" in first
    assert first.count("zq-") == 50
    assert f"?at={at.replace(':', '%3A')}&amp;page=2" in first
    second = client.get(URL, {"at": at, "page": 2}).content.decode()
    assert second.count("zq-") == 10 and "51–60 of 60" in second


def test_a_fact_erased_since_counts_as_erased_not_as_out_of_tier_one(client, editor):
    """Both facts were in tier one 7 days ago; the seat was erased since: its row and the count
    say erased, never "Tier one: no"."""
    now = _history()
    services.fact_delete(subject_id=T, key="seat_preference", actor=Actor.customer(T))
    client.force_login(editor)
    body = client.get(URL, {"at": _at(now - timedelta(days=7))}).content.decode()
    assert "2 facts, 1 in tier one, 1 erased since" in body
    assert "whether the agent had it in tier one went with it" in body
    tier_cells = re.findall(r'data-label="Tier one">(.*?)</td>', body)
    assert sorted(tier_cells) == ['<span class="muted">erased</span>', "yes"]


def test_tier_one_uses_the_cap_in_force_at_that_moment(client, editor):
    """The cap was 8 when both facts were held; lowered to 1 since: as of then, both were in
    tier one, as of now only the newest is."""
    now = _history()
    update = {"tier_one_cap": 1}
    current = fact_selectors.memory_settings()
    values = {name: getattr(current, name) for name in policy.SETTINGS_FIELDS} | update
    policy.memory_settings_update(values=values, actor=Actor.staff(editor), reason="smaller")
    client.force_login(editor)
    then = client.get(URL, {"at": _at(now - timedelta(days=7))}).content.decode()
    assert "2 facts, 2 in tier one." in then
    later = client.get(URL, {"at": _at(timezone.now() + timedelta(minutes=1))}).content.decode()
    assert "2 facts, 1 in tier one." in later


def test_the_moment_is_read_in_the_one_zone(client, editor, settings):
    """Learned at 10:00 UTC, 18:00 in Taipei: with the airline in Taipei, "17:30" is before it
    and "18:30" after it, and the page names the zone."""
    settings.TIME_ZONE = "Asia/Taipei"
    learned = timezone.now().replace(hour=10, minute=0, second=0, microsecond=0, tzinfo=UTC)
    learned -= timedelta(days=2)
    services.fact_upsert(
        subject_id=T, actor=Actor.extraction("job 1"), facts=[FactDraft("meal", "zq-meal")]
    )
    FactEvent.objects.filter(subject_id=T).update(created_at=learned)
    day = learned.date().isoformat()
    client.force_login(editor)
    before = client.get(URL, {"at": f"{day}T17:30"}).content.decode()
    after = client.get(URL, {"at": f"{day}T18:30"}).content.decode()
    assert "No facts at that moment" in before and "zq-meal" in after
    assert after.count("Times are in Asia/Taipei (UTC+08:00)") == 1


def test_while_the_traveller_paused_its_use_the_agent_had_nothing_in_tier_one(client, editor):
    """Paused 4 days ago, resumed 2 days ago: 3 days ago tier one was empty, before and after
    it held both facts."""
    now = _history()
    for days, paused in ((4, True), (2, False)):
        services.subject_set_preferences(
            subject_id=T, actor=Actor.customer(T), memory_use_paused=paused
        )
        FactEvent.objects.filter(subject_id=T, action="preferences_changed").filter(
            created_at__gt=now - timedelta(days=1)
        ).update(created_at=now - timedelta(days=days))
    client.force_login(editor)
    paused = client.get(URL, {"at": _at(now - timedelta(days=3))}).content.decode()
    assert "2 facts, 0 in tier one (the traveller had paused" in paused
    before = client.get(URL, {"at": _at(now - timedelta(days=4, hours=1))}).content.decode()
    after = client.get(URL, {"at": _at(now - timedelta(days=1))}).content.decode()
    assert "2 facts, 2 in tier one." in before and "2 facts, 2 in tier one." in after
