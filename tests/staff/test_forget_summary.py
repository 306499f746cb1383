"""Issue 23: "forget everything" and the retention sweep keep, per erased fact, what a single
deletion keeps (category, when learned, how many changes, who/when/how), never key or value."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import EventAction, FactEvent, MemoryFact
from tests.factories import FactFactory
from tests.support.pgdump import pg_dump_text

S = "T-FORGET"
BASE = f"/staff/travellers/{S}"
SECRETS = (
    "meal_preference_zq",
    "Kosher meals zq",
    "Halal meals zq",
    "seat_choice_zq",
    "Window seat zq",
)


@pytest.mark.django_db(transaction=True)  # pg_dump reads committed data only
def test_forget_everything_keeps_a_summary_per_fact_and_no_key_or_value(client, viewer):
    FactFactory(subject_id=S, key="meal_preference_zq", value="Kosher meals zq")
    services.fact_edit(
        subject_id=S,
        key="meal_preference_zq",
        value="Halal meals zq",
        actor=Actor.system("t"),
        reason="call",
        expected_version=1,
    )
    FactFactory(subject_id=S, key="seat_choice_zq", value="Window seat zq", category="constraint")
    learned = MemoryFact.objects.get(subject_id=S, key="meal_preference_zq").created_at

    receipt = services.subject_forget(
        subject_id=S, actor=Actor.customer(S), reason="forget everything in the privacy portal"
    )

    kept = {
        event.after["erased_fact"]["category"]: event
        for event in FactEvent.objects.filter(subject_id=S, action=EventAction.FORGOTTEN)
    }
    assert set(kept) == {"preference", "constraint"}
    meal = kept["preference"].after["erased_fact"]
    assert meal["changes"] == 1 and meal["learned_at"][:19] == learned.isoformat()[:19]
    assert meal["path"] == "forget_everything" and meal["receipt"] == receipt.number
    assert kept["constraint"].after["erased_fact"]["changes"] == 0
    assert all(event.actor_kind == "customer" for event in kept.values())
    dump = pg_dump_text()
    for secret in SECRETS:
        assert secret not in dump, secret

    client.force_login(viewer)
    timeline = client.get(f"{BASE}/timeline/").content.decode()
    assert "Deleted preference fact" in timeline and "changed 1 time" in timeline
    assert "Deleted constraint fact" in timeline and "changed 0 times" in timeline
    assert "Erased with everything else" in timeline
    assert "The traveller, in the privacy portal" in timeline
    page = client.get(f"{BASE}/facts/meal_preference_zq/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Deleted fact" in body and "Preference" in body
    assert "“Forget everything”" in body and receipt.number in body
    assert client.get(f"{BASE}/deleted/{kept['constraint'].key[1:]}/").status_code == 200
    for secret in SECRETS:
        assert secret not in timeline and secret not in body


@pytest.mark.django_db(transaction=True)
def test_the_retention_sweep_keeps_the_same_summary(client, viewer):
    FactFactory(subject_id=S, key="seat_choice_zq", value="Window seat zq", category="constraint")
    services.fact_set_expiry(
        subject_id=S,
        key="seat_choice_zq",
        expires_at=timezone.now() + timedelta(seconds=1),
        actor=Actor.system("t"),
        reason="t",
    )

    services.facts_sweep_expired(now=timezone.now() + timedelta(minutes=1))

    erasure = FactEvent.objects.get(subject_id=S, action=EventAction.DELETED)
    assert erasure.actor_kind == "retention"
    assert erasure.after["erased_fact"]["category"] == "constraint"
    assert erasure.after["erased_fact"]["changes"] == 1
    assert "Window seat zq" not in pg_dump_text() and "seat_choice_zq" not in pg_dump_text()
    client.force_login(viewer)
    body = client.get(f"{BASE}/facts/seat_choice_zq/").content.decode()
    assert "Deleted fact" in body and "Constraint" in body and "Retention policy" in body


@pytest.mark.django_db
def test_staff_clear_keeps_summaries_and_an_empty_traveller_records_none(client, viewer):
    FactFactory(subject_id=S, key="seat_choice_zq", value="Window seat zq")
    services.subject_clear(subject_id=S, actor=Actor.system("desk"), reason="GDPR request")
    [event] = FactEvent.objects.filter(subject_id=S, action=EventAction.FORGOTTEN)
    assert event.after["erased_fact"]["path"] == "clear"
    assert event.reason == "GDPR request"
    assert event.after["erased_fact"]["category"] == "preference"
    client.force_login(viewer)
    body = client.get(f"{BASE}/facts/seat_choice_zq/").content.decode()
    assert "Everything cleared by staff" in body and "Window seat zq" not in body

    services.subject_clear(subject_id=S, actor=Actor.system("desk"), reason="again")
    assert FactEvent.objects.filter(subject_id=S, action=EventAction.FORGOTTEN).count() == 1
