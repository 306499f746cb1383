"""The desk's small fixes from issue 23: each answers on the page where it is needed."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db.models import F
from django.test import Client
from django.utils import timezone
from django_otp.plugins.otp_totp.models import TOTPDevice

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent, MemoryFact, RetentionRule
from memoryadmin.staff.roles import PRIVACY_ADMIN
from memoryadmin.staff.templatetags.staff_time import day, local_time
from tests.factories import FactFactory
from tests.support.bulk import Row, load_facts

from .conftest import make_staff

pytestmark = pytest.mark.django_db

S = "T-FIX"
PASSWORD = "correct-horse-battery"  # the factory's


def test_an_exact_traveller_id_or_receipt_opens_that_traveller(client, viewer):
    FactFactory(subject_id=S, key="seat", value="Aisle")
    FactFactory(subject_id=f"{S}-2", key="seat", value="Window")
    FactFactory(subject_id="T-GONE", key="seat", value="Aisle")
    receipt = services.subject_forget(
        subject_id="T-GONE", actor=Actor.customer("T-GONE"), reason="t"
    )
    client.force_login(viewer)

    exact = client.get("/staff/travellers/", {"q": S})
    assert exact.status_code == 302 and exact["Location"] == f"/staff/travellers/{S}/"
    by_receipt = client.get("/staff/travellers/", {"q": receipt.number.lower()})
    assert by_receipt["Location"] == "/staff/travellers/T-GONE/"
    prefix = client.get("/staff/travellers/", {"q": "T-FI"})
    assert prefix.status_code == 200  # not exact: the list, as before
    words = client.get("/staff/travellers/", {"q": "Aisle"})
    assert words.status_code == 200


def test_a_bulk_action_with_nothing_selected_says_so_on_the_same_page(client, editor):
    FactFactory(subject_id=S, key="seat", value="Aisle")
    client.force_login(editor)
    back = f"/staff/travellers/{S}/"

    response = client.post(
        f"/staff/travellers/{S}/bulk/",
        {"action": "delete", "reason": "x", "next": back},
        follow=True,
    )

    assert response.redirect_chain[-1][0] == back
    assert "select at least one fact first" in response.content.decode()


def test_no_jobs_reads_no_extraction_jobs_yet(client, viewer):
    FactFactory(subject_id=S, key="seat", value="Aisle")
    client.force_login(viewer)
    body = client.get(f"/staff/travellers/{S}/").content.decode()
    assert "No extraction jobs yet" in body and "(newest 0)" not in body


def test_the_sign_in_page_says_you_are_signed_out_after_logout(client, viewer):
    client.force_login(viewer)
    response = client.post("/logout/", follow=True)
    assert "You are signed out" in response.content.decode()
    assert "You are signed out" not in Client().get("/login/").content.decode()


def test_the_code_page_shows_no_menu_and_one_sign_out(client):
    user = make_staff("pat", PRIVACY_ADMIN)
    TOTPDevice.objects.create(user=user, name="app", confirmed=True)
    client.post("/login/", {"username": "pat", "password": PASSWORD})

    body = client.get("/login/verify/").content.decode()

    assert 'aria-label="Dashboard"' not in body and "Review queue" not in body
    assert body.count('action="/logout/"') == 1


def test_the_fact_page_gives_the_time_of_its_version(client, viewer):
    FactFactory(subject_id=S, key="seat", value="Aisle")
    services.fact_flag_sensitive(subject_id=S, key="seat", actor=Actor.system("t"))
    flagged = FactEvent.objects.filter(subject_id=S, action="flagged_sensitive").get()
    client.force_login(viewer)

    body = client.get(f"/staff/travellers/{S}/facts/seat/").content.decode()

    assert f'datetime="{flagged.created_at.isoformat()}"' in body
    assert "(flagged sensitive)" in body


def _updated_cell(body: str, key: str) -> str:
    row = body[body.index(f'id="fact-{key}"') :]
    return re.search(r'data-label="Updated"><time[^>]*>([^<]*)</time>', row).group(1)


def test_updated_moves_on_flag_and_expire_but_retention_keeps_its_basis(client, viewer):
    learned = timezone.now() - timedelta(days=10)
    load_facts(
        [
            Row(S, "seat", "Aisle", updated_at=learned),
            Row(S, "meal", "Vegetarian", updated_at=learned),
        ]
    )
    RetentionRule.objects.create(name="sensitive", sensitive=True, ttl_days=30)
    client.force_login(viewer)
    before = client.get(f"/staff/travellers/{S}/").content.decode()
    assert _updated_cell(before, "seat") == _updated_cell(before, "meal") == day(learned)

    services.fact_flag_sensitive(subject_id=S, key="seat", actor=Actor.system("t"))
    services.fact_expire(subject_id=S, key="meal", actor=Actor.system("t"))

    after = client.get(f"/staff/travellers/{S}/").content.decode()
    assert _updated_cell(after, "seat") == "just now"
    assert _updated_cell(after, "meal") == "just now"
    seat = MemoryFact.objects.get(subject_id=S, key="seat")
    assert seat.updated_at == learned  # flagging does not extend retention:
    assert seat.expires_at == learned + timedelta(days=30)  # counted from the value's change
    assert MemoryFact.objects.get(subject_id=S, key="meal").updated_at == learned
    by_update = client.get(f"/staff/travellers/{S}/", {"sort": "updated"}).content.decode()
    assert by_update.index('id="fact-meal"') < by_update.index('id="fact-seat"')  # newest


def test_a_reveal_is_not_a_version(client, editor):
    FactFactory(subject_id=S, key="seat", value="Aisle")
    services.fact_flag_sensitive(subject_id=S, key="seat", actor=Actor.system("t"))
    FactEvent.objects.filter(subject_id=S).update(created_at=F("created_at") - timedelta(hours=2))
    services.fact_reveal(subject_id=S, key="seat", actor=Actor.system("t"), reason="caller")
    client.force_login(editor)

    body = client.get(f"/staff/travellers/{S}/facts/seat/").content.decode()

    version = re.search(r"<dt>Version</dt><dd>(.*?)</dd>", body).group(1)
    assert "2 hours ago" in version and "(flagged sensitive)" in version


def test_the_edit_form_focuses_the_value(client, editor):
    FactFactory(subject_id=S, key="seat", value="Aisle")
    client.force_login(editor)
    body = client.get(f"/staff/travellers/{S}/facts/seat/edit/").content.decode()
    textarea = re.search(r"<textarea[^>]*>", body).group(0)
    assert 'name="value"' in textarea and "autofocus" in textarea


def test_the_history_shows_labels_and_the_one_time_format(client, viewer):
    FactFactory(
        subject_id=S,
        key="health_note",
        value="Diabetic, carries insulin",
        actor=Actor.agent("host"),
        category="constraint",
    )
    expires = timezone.now() + timedelta(days=40)
    services.fact_set_expiry(
        subject_id=S, key="health_note", expires_at=expires, actor=Actor.system("t"), reason="t"
    )
    client.force_login(viewer)

    body = client.get(f"/staff/travellers/{S}/timeline/").content.decode()

    diff = body[body.index("<tbody>") :]
    assert "<ins>Waiting for review</ins>" in diff and "pending_review" not in diff
    assert "<ins>Constraint</ins>" in diff
    assert f"<ins>{local_time(expires)}</ins>" in diff
    assert not re.search(r"\d{4}-\d\d-\d\d", re.sub(r"<[^>]*>", " ", diff))
