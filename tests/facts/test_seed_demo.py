"""`manage.py seed_demo`: the demo a newcomer sees after `make run`."""

import pytest
from django.core.management import call_command
from django.test import Client

from memoryadmin.facts import selectors
from memoryadmin.facts.models import EventAction, FactEvent, FactStatus, MemoryFact, Subject

pytestmark = pytest.mark.django_db


def test_seed_demo_loads_travellers_history_and_logins_and_is_idempotent(capsys):
    call_command("seed_demo")
    out = capsys.readouterr().out
    assert "editor / editor-demo-2026" in out and "http://127.0.0.1:8000/login/" in out
    assert Subject.objects.count() == 20
    facts, events = MemoryFact.objects.count(), FactEvent.objects.count()
    assert MemoryFact.objects.filter(status=FactStatus.PENDING_REVIEW, sensitive=True).exists()
    assert MemoryFact.objects.filter(category="constraint").count() >= 5
    assert MemoryFact.objects.filter(value__contains="走道").exists()
    actions = set(FactEvent.objects.values_list("action", flat=True))
    assert {EventAction.CREATED, EventAction.UPDATED, EventAction.APPROVED} <= actions
    assert all(f.expires_at for f in MemoryFact.objects.all())  # the demo retention rules apply
    assert [f.key for f in selectors.tier_one("FF-100231")][0] == "overnight_flight"

    call_command("seed_demo")
    assert (MemoryFact.objects.count(), FactEvent.objects.count()) == (facts, events)


def test_the_demo_editor_can_log_in_and_see_travellers():
    call_command("seed_demo")
    client = Client()
    assert client.login(username="editor", password="editor-demo-2026")
    page = client.get("/staff/travellers/")
    assert page.status_code == 200
    assert "FF-100231" in page.content.decode()
