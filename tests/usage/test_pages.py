"""Where people see evidence and receipts: the staff fact page, traveller page (fixed queries
whether a fact has 5 uses or 5,000), turn view, overview and unused list; the portal's cards in
English and Traditional Chinese; the export; the use-retention setting with its policy event."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import MemoryFact, PolicyEvent
from memoryadmin.facts.services import FactDraft
from memoryadmin.facts.validation import session_tag
from memoryadmin.usage.models import MemoryUse, UseHow
from memoryadmin.usage.services import TurnUse, uses_record
from tests.support.csrf import without_csrf_tokens
from tests.support.package import memory

pytestmark = pytest.mark.django_db
XSS = "<script>alert(1)</script>"
T = "T-USE-1"


def learned(subject_id: str = T, *, quote: str = "I always want an aisle seat") -> None:
    services.fact_upsert(
        subject_id=subject_id,
        actor=Actor.extraction("job 1"),
        session_tag="0123456789ab",
        facts=[
            FactDraft("seat_preference", "Prefers aisle seats", evidence=quote),
            FactDraft("meal", "Vegetarian"),
        ],
    )


def used(subject_id: str, n: int, key: str = "seat_preference") -> None:
    """n receipts of `key`: a third recalled, over n // 2 + 1 sessions, in one INSERT."""
    uses_record(
        subject_id=subject_id,
        uses=[
            TurnUse(
                f"session-{i // 2}",
                f"turn-{i}",
                injected=[key] if i % 3 else [],
                recalled=[] if i % 3 else [key],
            )
            for i in range(n)
        ],
    )


def test_the_fact_page_shows_the_quote_the_counts_and_the_last_20_uses(client, viewer):
    learned(quote=f"aisle {XSS} please")
    used(T, 30)
    client.force_login(viewer)
    body = client.get(f"/staff/travellers/{T}/facts/seat_preference/").content.decode()
    assert '<q class="evidence">aisle &lt;script&gt;alert(1)&lt;/script&gt; please</q>' in body
    assert XSS not in body
    assert "Used in 15 conversations (injected 20, recalled 10), last used <time" in body
    assert body.count(f"/staff/travellers/{T}/turns/{session_tag('session-14')}/") == 2
    assert (
        body.count('<td data-label="How">Given in the prompt</td>')
        + body.count('<td data-label="How">Recalled</td>')
    ) == 20


def test_a_sensitive_facts_quote_is_masked_until_revealed(client, editor):
    services.fact_upsert(
        subject_id=T,
        actor=Actor.extraction("job"),
        facts=[FactDraft("health_note", "Diabetic, carries insulin", evidence="I'm diabetic zq9")],
    )
    client.force_login(editor)
    page = client.get(f"/staff/travellers/{T}/facts/health_note/")
    body = without_csrf_tokens(page.content.decode())
    assert "zq9" not in body and "••••••" in body


@pytest.mark.parametrize(
    ("actor", "words"),
    [
        (Actor.customer(T), "Corrected by the traveller"),
        (Actor.system("import"), "Learned from a conversation, no quote kept"),
    ],
)
def test_without_a_quote_the_fact_page_says_where_it_came_from(client, viewer, actor, words):
    learned()
    fact = MemoryFact.objects.get(subject_id=T, key="seat_preference")
    services.fact_edit(
        subject_id=T,
        key=fact.key,
        expected_version=fact.version,
        actor=actor,
        value="Prefers window seats",
    )
    client.force_login(viewer)
    body = client.get(f"/staff/travellers/{T}/facts/seat_preference/").content.decode()
    assert "I always want" not in body.split("<h2>History</h2>")[0]


@pytest.mark.parametrize("uses", [5, 5000])
def test_traveller_page_queries_do_not_grow_with_uses(
    client, editor, uses, django_assert_max_num_queries
):
    learned()
    used(T, uses)
    client.force_login(editor)
    for params in ({}, {"unused": "1"}):
        with django_assert_max_num_queries(13):
            response = client.get(f"/staff/travellers/{T}/", params)
        assert response.status_code == 200
    body = client.get(f"/staff/travellers/{T}/").content.decode()
    assert '<td data-label="Last used">' in body
    day = timezone.localtime(timezone.now())
    assert f"{day.day} {day.strftime('%b')} {day.year}" in body


def test_the_unused_filter_and_the_overview_signal(client, viewer):
    long_ago = timezone.now() - timedelta(days=200)
    with mock.patch("django.utils.timezone.now", return_value=long_ago):  # the clock, not our code
        learned()
    used(T, 3, key="meal")
    old = MemoryUse.objects.create(
        subject_id=T,
        key_hash="#x",
        fact_id=MemoryFact.objects.get(subject_id=T, key="seat_preference").pk,
        how=UseHow.INJECTED,
        used_at=timezone.now() - timedelta(days=120),
    )
    assert old.pk
    client.force_login(viewer)
    body = client.get(f"/staff/travellers/{T}/", {"unused": "1"}).content.decode()
    assert 'id="fact-seat_preference"' in body and 'id="fact-meal"' not in body
    overview = client.get("/staff/").content.decode()
    assert "<strong>1</strong> not used in 90 days" in overview
    listing = client.get("/staff/unused/").content.decode()
    assert f"/staff/travellers/{T}/?unused=1" in listing


def test_the_turn_view_shows_what_the_agent_had(client, editor):
    learned()
    uses_record(
        subject_id=T,
        uses=[TurnUse("sess-A", "turn/7", injected=["seat_preference"], recalled=["meal"])],
    )
    client.force_login(editor)
    url = f"/staff/travellers/{T}/turns/{session_tag('sess-A')}/turn/7/"
    body = client.get(url).content.decode()
    given, recalled = body.split("Recalled by a memory tool")
    assert "Prefers aisle seats" in given and "Vegetarian" in recalled
    services.fact_delete(subject_id=T, key="meal", actor=Actor.customer(T))
    assert "Vegetarian" not in client.get(url).content.decode()
    assert client.get(f"/staff/travellers/{T}/turns/{session_tag('x')}/none/").status_code == 404


def test_the_turn_view_needs_a_staff_role(client, no_role):
    learned()
    client.force_login(no_role)
    assert client.get(f"/staff/travellers/{T}/turns/abc/t/").status_code == 403


# --- the portal ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "why", "count", "wrong", "dont"),
    [
        (
            "en",
            "Why the assistant knows this",
            "Used in 2 conversations, last on",
            "This is wrong",
            "Delete this",
        ),
        (
            "zh-hant",
            "AI 客服為什麼知道這件事",
            "已在 2 次對話中使用，最近一次是",
            "內容有誤",
            "刪除這一筆",
        ),
    ],
)
def test_each_card_says_why_and_how_often(
    signed_in, language, why, count, wrong, dont, django_assert_max_num_queries
):
    learned(quote=f"I always want an aisle seat {XSS}")
    used(T, 3)
    client = signed_in(T, language=language)
    with django_assert_max_num_queries(8):
        body = client.get("/portal/").content.decode()
    assert why in body and count in body
    assert "I always want an aisle seat &lt;script&gt;" in body and XSS not in body
    assert wrong in body and dont in body
    assert "Don't use this" not in body and "不要再使用這筆資料" not in body  # delete says delete


def test_one_traveller_never_sees_anothers_quote_or_counts(signed_in):
    learned("T-OTHER", quote="zq5 mine only")
    used("T-OTHER", 4)
    learned(quote="ordinary words")
    body = without_csrf_tokens(signed_in(T).get("/portal/").content.decode())
    assert "zq5" not in body and "Used in" not in body


def test_the_export_has_evidence_and_use_counts(signed_in):
    learned()
    used(T, 3)
    data = memory(signed_in(T).get("/portal/download").content)
    seat = next(fact for fact in data["facts"] if fact["key"] == "seat_preference")
    assert seat["evidence"]["quote"] == "I always want an aisle seat"
    assert seat["evidence"]["source"] == "said"
    assert seat["use"]["conversations"] == 2 and seat["use"]["injected"] == 2
    meal = next(fact for fact in data["facts"] if fact["key"] == "meal")
    assert meal["evidence"]["quote"] is None and meal["use"]["conversations"] == 0


# --- the setting ---------------------------------------------------------------------------------


def test_use_retention_is_a_setting_with_its_own_policy_event(client, privacy_admin):
    client.force_login(privacy_admin)
    page = client.get("/staff/settings/").content.decode()
    assert "Keep use receipts for (days)" in page and 'value="90"' in page
    bad = client.post("/staff/settings/use-retention/", {"use-days": "0", "use-reason": "x"})
    assert bad.status_code == 400 and "greater than or equal to 1" in bad.content.decode()
    missing = client.post("/staff/settings/use-retention/", {"use-days": "30"})
    assert missing.status_code == 400
    response = client.post(
        "/staff/settings/use-retention/", {"use-days": "30", "use-reason": "DPIA-12"}
    )
    assert response.status_code == 302
    event = PolicyEvent.objects.get(action="use_retention_changed")
    assert (event.before, event.after, event.reason) == (
        {"use_retention_days": 90},
        {"use_retention_days": 30},
        "DPIA-12",
    )
