"""The staff settings and history pages as people read them: memory off for everyone asks first
with the count and the overview says so; one error for "0 days"; the webhook secret whole with a
Copy button; the legal hold page's warning and Cancel; the policy history by kind and paged; the
delivery log in words; flagging sensitive says when a rule shortens the expiry; a history row
never shows a value changing to itself; times in the one TIME_ZONE, the zone named once; roles
and actors in words."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent, MemorySettings, PolicyEvent
from memoryadmin.facts.services import RuleProposal
from memoryadmin.privacy.models import DeliveryAttempt, WebhookDelivery
from memoryadmin.privacy.outbox import outbox_dispatch
from memoryadmin.privacy.recipients import webhook_recipient_add
from memoryadmin.privacy.webhooks import Outcome, delivery_record_attempt
from tests.factories import FactFactory
from tests.staff.conftest import editor, privacy_admin, viewer  # noqa: F401
from tests.staff.test_settings_views import settings_form

pytestmark = pytest.mark.django_db


def _text(response) -> str:
    body = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", response.content.decode(), flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body))


def test_turning_memory_off_for_everyone_asks_with_the_count_and_the_overview_says_so(
    client,
    privacy_admin,  # noqa: F811
):
    for n in range(3):
        FactFactory(subject_id=f"FF-93300{n}", key="seat", value="aisle")
    client.force_login(privacy_admin)
    assert "Memory is on for every traveller" in _text(client.get("/staff/settings/"))

    ask = client.post("/staff/settings/", settings_form(memory_enabled=None))
    assert ask.status_code == 200
    assert "This affects 3 travellers with memory" in _text(ask)
    assert MemorySettings.objects.get().memory_enabled is True  # not yet

    done = client.post(
        "/staff/settings/", {**settings_form(memory_enabled=None), "confirm_off": "yes"}
    )
    assert done.status_code == 302
    assert MemorySettings.objects.get().memory_enabled is False
    assert "Memory is off for every traveller" in _text(client.get("/staff/settings/"))
    assert "Memory is off for every traveller." in _text(client.get("/staff/"))


def test_zero_days_gives_one_error(client, privacy_admin):  # noqa: F811
    client.force_login(privacy_admin)
    response = client.post(
        "/staff/settings/retention/add/",
        {"name": "Short", "sensitive": "any", "keep": "days", "ttl_days": "0", "reason": "r"},
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert body.count('class="field-error"') == 1
    assert "at least 1 day" in body


def test_the_webhook_secret_is_shown_whole_with_a_copy_button(client, privacy_admin):  # noqa: F811
    client.force_login(privacy_admin)
    response = client.post(
        "/staff/privacy/webhooks/",
        {
            "name": "CRM",
            "url": "https://crm.example.com/hooks",
            "events": ["memory.subject.erased"],
            "reason": "Art. 19",
        },
    )
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    secret = re.search(r'<textarea id="secret"[^>]*>(whsec_[^<]+)</textarea>', page)
    assert secret is not None  # whole, as text a person can select without JavaScript
    assert 'data-copy="secret"' in page and ">Copy</button>" in page


def test_the_legal_hold_page_says_it_blocks_forget_everything_and_has_a_cancel(
    client,
    privacy_admin,  # noqa: F811
):
    FactFactory(subject_id="FF-933100", key="seat", value="aisle")
    client.force_login(privacy_admin)
    page = client.get("/staff/settings/legal-hold/FF-933100/")
    text = _text(page)
    assert 'blocks the traveller\'s own "forget everything"' in text.replace("&#x27;", "'").replace(
        "&quot;", '"'
    )
    assert re.search(r'<a href="/staff/travellers/FF-933100/">Cancel</a>', page.content.decode())


def test_the_policy_history_is_filtered_by_kind_and_paged(client, privacy_admin):  # noqa: F811
    actor = Actor.staff(privacy_admin)
    for n in range(55):
        services.retention_rule_save(
            proposal=RuleProposal(
                pk=None,
                name=f"Rule {n}",
                category="",
                key_glob=f"k{n}_*",
                sensitive=None,
                ttl_days=30 + n,
            ),
            actor=actor,
            reason="tidy",
        )
    client.force_login(privacy_admin)
    assert client.post("/staff/settings/", settings_form(tier_one_cap="5")).status_code == 302
    everything = _text(client.get("/staff/settings/history/"))
    assert "1–50 of 56" in everything
    settings_only = _text(client.get("/staff/settings/history/?kind=settings"))
    assert "1–1 of 1" in settings_only and "Retention rule added" not in settings_only
    rules = client.get("/staff/settings/history/?kind=rules&page=2")
    assert "51–55 of 55" in _text(rules)
    assert PolicyEvent.objects.count() == 56


def test_the_delivery_log_reads_in_words(client, privacy_admin, settings):  # noqa: F811
    webhook_recipient_add(
        name="Warehouse", url="https://wh.example.com/h", events=None, actor=Actor.system("t")
    )
    FactFactory(subject_id="FF-933200", key="seat", value="aisle")
    services.fact_delete(subject_id="FF-933200", key="seat", actor=Actor.system("t"))
    outbox_dispatch()
    delivery = WebhookDelivery.objects.get()
    now = timezone.now()
    delivery_record_attempt(
        delivery_id=delivery.pk, outcome=Outcome(False, None, 3, "ConnectError"), attempted_at=now
    )
    delivery_record_attempt(
        delivery_id=delivery.pk,
        outcome=Outcome(False, 500, 4),
        attempted_at=now + timedelta(seconds=1),
    )
    assert DeliveryAttempt.objects.count() == 2
    client.force_login(privacy_admin)
    page = client.get(f"/staff/privacy/webhooks/deliveries/{delivery.pk}/")
    text = _text(page)
    assert "Could not connect" in text and "Answered 500" in text
    assert "ConnectError" not in text and "Path" not in text
    listing = client.get("/staff/privacy/webhooks/").content.decode()
    msg = delivery.event.msg_id
    assert f">{msg}</a>" not in listing and f"<code>{msg}</code>" in listing


def test_flagging_sensitive_says_when_a_rule_shortens_the_expiry(client, editor):  # noqa: F811
    services.retention_rule_save(
        proposal=RuleProposal(
            pk=None, name="Sensitive", category="", key_glob="", sensitive=True, ttl_days=30
        ),
        actor=Actor.system("t"),
        reason="privacy promise",
    )
    FactFactory(subject_id="FF-933300", key="seat", value="aisle")
    client.force_login(editor)
    base = "/staff/travellers/FF-933300/facts/seat/flag/"
    from memoryadmin.facts import selectors
    from memoryadmin.staff.templatetags.staff_time import day

    fact = selectors.subject_fact("FF-933300", "seat")
    expected = day(fact.updated_at + timedelta(days=30))
    assert f"it will now be deleted on {expected}." in _text(client.get(base))
    done = client.post(base, {"reason": "health detail", "version": fact.version}, follow=True)
    assert f"It will now be deleted on {expected}." in _text(done)


def test_a_history_row_never_shows_a_value_changing_to_itself(client, viewer):  # noqa: F811
    fact = FactFactory(subject_id="FF-933400", key="seat", value="aisle")
    services.fact_flag_sensitive(
        subject_id="FF-933400", key="seat", actor=Actor.system("t"), reason="x"
    )
    # Two snapshots that differ only below what the page shows (the same second).
    FactEvent.objects.create(
        subject_id="FF-933400",
        key="seat",
        action="expiry_changed",
        actor_kind="system",
        actor_label="sweep",
        before={"expires_at": "2027-06-02T10:00:00.100000+00:00", "value": "aisle"},
        after={"expires_at": "2027-06-02T10:00:00.900000+00:00", "value": "aisle"},
    )
    client.force_login(viewer)
    body = client.get("/staff/travellers/FF-933400/timeline/").content.decode()
    pairs = re.findall(r"<del>(.*?)</del> → <ins>(.*?)</ins>", body)
    assert pairs  # the flag's own change is shown
    assert all(old != new for old, new in pairs), pairs
    assert fact.key in body


@pytest.mark.parametrize(
    "path",
    [
        "/staff/travellers/FF-933500/timeline/",
        "/staff/travellers/FF-933500/facts/seat/",
        "/staff/access/",
        "/staff/privacy/webhooks/",
    ],
)
def test_times_are_in_the_one_zone_named_once(client, privacy_admin, settings, path):  # noqa: F811
    settings.TIME_ZONE = "Asia/Taipei"
    FactFactory(subject_id="FF-933500", key="seat", value="aisle")
    client.force_login(privacy_admin)
    client.get("/staff/travellers/FF-933500/")  # an access row to list
    text = _text(client.get(path))
    assert text.count("Asia/Taipei") == 1, path
    assert "UTC+08:00" in text and text.count("UTC") == 1


def test_roles_and_actors_read_as_words(client, privacy_admin):  # noqa: F811
    FactFactory(subject_id="FF-933600", key="seat", value="aisle", actor=Actor.agent("host-a"))
    services.fact_edit(
        subject_id="FF-933600",
        key="seat",
        value="window",
        expected_version=None,
        actor=Actor.customer("FF-933600"),
        reason="portal",
    )
    client.force_login(privacy_admin)
    for path in ("/staff/", "/staff/travellers/FF-933600/timeline/", "/staff/settings/history/"):
        text = _text(client.get(path))
        assert "privacy_admin" not in text and "privacy admin" in text
        assert "traveller:FF-" not in text and "token:" not in text
