"""The dashboard pages as a signed-in user sees them: content, masking, escaping, query counts."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from urllib.parse import quote

import pytest
from django.contrib.sessions.models import Session
from django.urls import reverse
from django.utils import timezone

from memoryadmin.extraction.models import ExtractionJob, JobStatus
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent, MemoryFact
from tests.factories import FactFactory

pytestmark = pytest.mark.django_db

XSS = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def _facts(subject_id: str, count: int) -> None:
    services.fact_upsert(
        subject_id=subject_id,
        facts=[
            services.FactDraft(f"topic_{n}", f"Likes thing {n}", "preference") for n in range(count)
        ],
        actor=Actor.system("test"),
    )


@pytest.mark.parametrize("count", [5, 500])
def test_traveller_page_has_constant_queries(client, editor, count, django_assert_max_num_queries):
    _facts("T-Q", count)
    client.force_login(editor)
    for params in ({}, {"sort": "key"}, {"page": "10"}):
        with django_assert_max_num_queries(12):
            response = client.get("/staff/travellers/T-Q/", params)
        assert response.status_code == 200
    body = client.get("/staff/travellers/T-Q/").content.decode()
    assert body.count('id="fact-topic_') == min(count, 50)
    assert body.count('name="keys"') == min(count, 50)  # every row can be selected
    if count > 50:
        assert "1–50 of 500" in body and "page 1 of 10" in body
        last = client.get("/staff/travellers/T-Q/", {"page": "10"}).content.decode()
        assert "451–500 of 500" in last and 'id="fact-topic_499"' in last


def test_row_links_are_the_reversed_urls_whatever_the_key(client, editor):
    """The links are built from one reversal per URL name; they must equal reverse() itself."""
    keys = ["座位偏好", "seat.pref-2", "a b%c", "semi;colon@home"]
    for key in keys:
        FactFactory(subject_id="T-U:1@x", key=key, value="V")
    services.fact_flag_sensitive(subject_id="T-U:1@x", key=keys[0], actor=Actor.system("t"))
    client.force_login(editor)
    body = client.get(reverse("staff:traveller", args=["T-U:1@x"])).content.decode()
    for fact in MemoryFact.objects.filter(subject_id="T-U:1@x"):
        key = fact.key
        expected = [
            reverse("staff:fact", args=["T-U:1@x", key]),
            reverse("staff:fact_edit", args=["T-U:1@x", key]),
            reverse("staff:fact_expiry", args=["T-U:1@x", key]),
            reverse("staff:fact_action", args=["T-U:1@x", key, "expire"]),
            reverse("staff:fact_action", args=["T-U:1@x", key, "delete"]),
        ]
        expected.append(
            reverse(
                "staff:fact_action", args=["T-U:1@x", key, "unflag" if fact.sensitive else "flag"]
            )
        )
        if fact.sensitive:
            expected.append(reverse("staff:fact_reveal", args=["T-U:1@x", key]))
        for url in expected:
            assert f'href="{html.escape(url)}"' in body, url
        assert client.get(reverse("staff:fact", args=["T-U:1@x", key])).status_code == 200


@pytest.mark.parametrize("count", [5, 5000])
def test_timeline_has_constant_queries(client, viewer, count, django_assert_max_num_queries):
    _facts("T-E", 1)
    FactEvent.objects.bulk_create(
        FactEvent(
            subject_id="T-E",
            key="topic_0",
            action="updated",
            actor_kind="agent",
            actor_label="token:host",
            before={"value": f"v{n}"},
            after={"value": f"v{n + 1}"},
        )
        for n in range(count)
    )
    client.force_login(viewer)
    with django_assert_max_num_queries(12):
        response = client.get("/staff/travellers/T-E/timeline/")
    assert response.status_code == 200
    assert response.content.decode().count("<del>") == min(count, 50)
    with django_assert_max_num_queries(12):
        response = client.get("/staff/travellers/T-E/facts/topic_0/", {"page": 2})
    assert response.status_code == 200


def test_the_traveller_page_sorts_by_a_column(client, viewer):
    FactFactory(subject_id="T-S", key="b_second", value="B", category="preference")
    FactFactory(subject_id="T-S", key="a_first", value="A", category="constraint")
    client.force_login(viewer)
    body = client.get("/staff/travellers/T-S/").content.decode()
    assert body.index('id="fact-b_second"') < body.index('id="fact-a_first"')
    body = client.get("/staff/travellers/T-S/", {"sort": "key"}).content.decode()
    assert body.index('id="fact-a_first"') < body.index('id="fact-b_second"')
    assert client.get("/staff/travellers/T-S/", {"sort": "nonsense"}).status_code == 200


def test_overview_counts_and_chart(client, viewer, django_assert_max_num_queries):
    FactFactory(subject_id="T-O1", key="seat", value="Aisle", category="preference")
    FactFactory(
        subject_id="T-O1", key="mobility", value="Uses a wheelchair", actor=Actor.agent("h")
    )
    FactFactory(subject_id="T-O2", key="gone", value="Old")
    services.fact_delete(subject_id="T-O2", key="gone", actor=Actor.customer("T-O2"))
    services.fact_set_expiry(
        subject_id="T-O1",
        key="seat",
        expires_at=timezone.now() + timedelta(days=3),
        actor=Actor.system("t"),
    )
    ExtractionJob.objects.create(
        subject_id="T-O1",
        session_tag="abcdef012345",
        turn_id="1",
        status=JobStatus.FAILED,
        finished_at=timezone.now(),
    )
    client.force_login(viewer)
    with django_assert_max_num_queries(12):
        body = client.get("/staff/").content.decode()
    assert "<strong>2</strong> travellers" in body
    assert "<strong>1</strong> waiting for review" in body
    assert "<strong>1</strong> expiring within 7 days" in body
    assert "<strong>1</strong> deleted by travellers in 30 days" in body
    assert "<strong>1</strong> extraction jobs failed in 24 hours" in body
    assert '<rect class="bar learned"' in body and "<svg" in body


def test_search_by_id_prefix_and_by_words_in_values(client, viewer):
    FactFactory(subject_id="FF-1001", key="seat", value="Prefers aisle seats")
    FactFactory(subject_id="FF-2002", key="meal", value="Vegetarian meals please")
    FactFactory(subject_id="XY-3003", key="meal", value="Kosher meals")
    client.force_login(viewer)

    def found(query: str) -> set[str]:
        body = client.get("/staff/travellers/", {"q": query}).content.decode()
        return {s for s in ("FF-1001", "FF-2002", "XY-3003") if s in body}

    assert found("FF-") == {"FF-1001", "FF-2002"}
    assert found("vegetarian") == {"FF-2002"}
    assert found("MEALS kosher") == {"XY-3003"}
    assert found("") == {"FF-1001", "FF-2002", "XY-3003"}
    assert found("nothing-like-this") == set()


def test_a_forget_everything_receipt_number_finds_its_traveller(client, viewer):
    FactFactory(subject_id="FF-7007", key="seat", value="Aisle")
    receipt = services.subject_forget(subject_id="FF-7007", actor=Actor.customer("FF-7007"))
    FactFactory(subject_id="FF-8008", key="seat", value="Window")
    client.force_login(viewer)
    found = client.get("/staff/travellers/", {"q": receipt.number.lower()})
    assert found.status_code == 302 and found["Location"] == "/staff/travellers/FF-7007/"
    timeline = client.get("/staff/travellers/FF-7007/timeline/").content.decode()
    assert receipt.number in timeline


def test_sensitive_values_are_masked_for_a_viewer_everywhere(client, viewer):
    FactFactory(subject_id="T-M", key="health_note", value="Carries insulin")
    services.fact_flag_sensitive(subject_id="T-M", key="health_note", actor=Actor.system("t"))
    services.fact_edit(
        subject_id="T-M",
        key="health_note",
        expected_version=2,
        value="Carries insulin pens",
        actor=Actor.system("t"),
    )
    client.force_login(viewer)
    for url in (
        "/staff/travellers/T-M/",
        "/staff/travellers/T-M/timeline/",
        "/staff/travellers/T-M/facts/health_note/",
    ):
        body = client.get(url).content.decode()
        assert "insulin" not in body, url
        assert "••••••" in body


def test_fact_values_are_escaped(client, editor):
    FactFactory(subject_id="T-X", key="note", value=XSS)
    client.force_login(editor)
    for url in (
        "/staff/travellers/T-X/",
        "/staff/travellers/T-X/timeline/",
        "/staff/travellers/T-X/facts/note/",
        "/staff/travellers/T-X/facts/note/edit/",
    ):
        body = client.get(url).content.decode()
        assert "<script>alert" not in body and "<img src=x" not in body, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body, url


def test_timeline_shows_the_after_data_of_a_clear(client, viewer):
    FactFactory(subject_id="T-C", key="seat", value="Aisle")
    services.subject_clear(subject_id="T-C", actor=Actor.customer("T-C"), reason="portal")
    client.force_login(viewer)
    body = client.get("/staff/travellers/T-C/timeline/").content.decode()
    assert "All facts cleared" in body and "Facts deleted" in body
    assert "value erased" in body and "Aisle" not in body


def test_history_can_be_filtered_by_action_and_actor(client, viewer, editor):
    FactFactory(subject_id="T-F", key="seat", value="Aisle")
    services.fact_edit(
        subject_id="T-F",
        key="seat",
        expected_version=1,
        value="Window",
        actor=Actor.staff(editor),
        reason="asked on the phone",
    )
    client.force_login(viewer)
    body = client.get("/staff/travellers/T-F/timeline/", {"action": "updated"}).content.decode()
    assert "asked on the phone" in body and "<del>Aisle</del>" in body and "Window" in body
    body = client.get("/staff/travellers/T-F/timeline/", {"actor": "agent"}).content.decode()
    assert "No events match this filter" in body


def test_staff_sessions_end_after_30_idle_minutes(client, viewer, settings):
    assert settings.SESSION_COOKIE_AGE == 30 * 60
    client.force_login(viewer)
    session = client.session
    session["_idle_touched"] = 0  # last renewed long ago
    session.save()
    response = client.get("/staff/")
    assert response.cookies["sessionid"]["max-age"] == 30 * 60  # renewed: 30 more minutes
    assert "sessionid" not in client.get("/staff/review/").cookies  # at most once a minute
    Session.objects.update(expire_date=timezone.now() - timedelta(seconds=1))
    response = client.get("/staff/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_actions_from_a_later_page_or_another_sort_come_back_to_it(client, editor):
    """With 50 rows a page, a change made on page 2 (sorted by key) returns to page 2 sorted by
    key, not to the first page where the fact is not."""
    _facts("T-B", 60)
    client.force_login(editor)
    here = "/staff/travellers/T-B/?sort=key&page=2"
    back = "?next=" + quote(here, safe="")
    body = client.get(here).content.decode()
    rows = re.findall(r'<tr id="fact-(topic_\d+)"', body)
    assert len(rows) == 10 and rows == sorted(rows)  # the last 10 keys in key order
    key = rows[0]
    assert f'href="/staff/travellers/T-B/facts/{key}/expire/{html.escape(back)}"' in body
    assert f'href="/staff/travellers/T-B/facts/{key}/"' in body  # history: no detour
    assert f'<input type="hidden" name="next" value="{html.escape(here)}">' in body

    expire = f"/staff/travellers/T-B/facts/{key}/expire/{back}"
    form = client.get(expire).content.decode()
    assert f'href="{html.escape(here)}">Cancel' in form
    done = client.post(expire, {"reason": "Outdated", "version": 1, "next": here})
    assert done.status_code == 302 and done["Location"] == here

    edit = f"/staff/travellers/T-B/facts/{rows[1]}/edit/{back}"
    assert f'href="{html.escape(here)}">Cancel' in client.get(edit).content.decode()
    saved = client.post(
        edit, {"value": "Window", "category": "preference", "reason": "Call", "version": 1}
    )
    assert saved["Location"] == here

    data = {"keys": rows[2:4], "action": "expire", "reason": "Outdated", "next": here}
    confirm = client.post("/staff/travellers/T-B/bulk/", data).content.decode()
    assert f'<input type="hidden" name="next" value="{html.escape(here)}">' in confirm
    applied = client.post("/staff/travellers/T-B/bulk/", {**data, "confirmed": "True"})
    assert applied["Location"] == here
    assert MemoryFact.objects.filter(subject_id="T-B", expires_at__isnull=False).count() == 3

    # Only this site's addresses are followed.
    elsewhere = {**data, "confirmed": "True", "next": "https://evil.example/"}
    assert client.post("/staff/travellers/T-B/bulk/", elsewhere)["Location"] == (
        "/staff/travellers/T-B/"
    )
