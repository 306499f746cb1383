"""A second draw in the same week adds only facts not yet sampled that week, and a fact marked
twice counts once, by its latest mark, on the page and on /metrics alike."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.test import Client

from memoryadmin.observability import gauges
from memoryadmin.quality.models import QualitySample, QualitySampleItem
from memoryadmin.staff.roles import EDITOR
from tests.observability.scrape import value
from tests.quality.conftest import learn
from tests.staff.conftest import make_staff

pytestmark = pytest.mark.django_db


@pytest.fixture
def editor_client() -> Client:
    client = Client()
    client.force_login(make_staff("quinn", EDITOR))
    return client


def _mark(client: Client, item: QualitySampleItem, mark: str) -> None:
    response = client.post(
        f"/staff/quality/sample/{item.pk}/mark/",
        {f"q{item.pk}-mark": mark, f"q{item.pk}-reason": "one_off" if mark == "wrong" else ""},
    )
    assert response.status_code == 302


def _overall(client: Client, settings) -> tuple[str, float]:
    page = client.get("/staff/quality/").content.decode()
    overall = re.search(r'data-stat="precision">(.*?)</li>', page, re.S).group(1)
    settings.METRICS_ALLOWED_NETWORKS = ["10.20.0.0/16"]
    cache.delete(gauges.CACHE_KEY)
    text = Client(REMOTE_ADDR="10.20.3.4").get("/metrics").content.decode()
    cache.delete(gauges.CACHE_KEY)
    return overall, value(text, "memoryadmin_memory_precision")


def test_a_redraw_in_the_same_week_takes_only_facts_not_yet_sampled(editor_client, settings):
    for n in range(3):
        learn(f"FF-RD-{n}", "seat_preference", f"Prefers aisle seats {n}")
    assert editor_client.post("/staff/quality/sample/draw/").status_code == 302
    first = QualitySample.objects.get()
    for item in first.items.all():
        _mark(editor_client, item, "wrong")
    learn("FF-RD-9", "seat_preference", "Prefers window seats")

    response = editor_client.post("/staff/quality/sample/draw/", follow=True)
    assert "Drew 1 of the 1 facts" in response.content.decode()
    second = QualitySample.objects.exclude(pk=first.pk).get()
    assert [i.subject_id for i in second.items.all()] == ["FF-RD-9"]
    _mark(editor_client, second.items.get(), "correct")

    overall, metric = _overall(editor_client, settings)
    assert "1 correct of 4 marked" in overall
    assert metric == pytest.approx(0.25)


def test_a_fact_marked_in_two_draws_counts_once_by_its_latest_mark(editor_client, settings):
    """Two draws of one week that both hold the fact, as samples drawn before each draw left
    out the week's earlier ones did: wrong in the first, correct in the second."""
    learn("FF-RD-1", "overnight_flights", "Avoids overnight flights")
    learn("FF-RD-2", "seat_preference", "Prefers aisle seats")
    assert editor_client.post("/staff/quality/sample/draw/").status_code == 302
    first = QualitySample.objects.get()
    twice = first.items.get(subject_id="FF-RD-1")
    other = first.items.get(subject_id="FF-RD-2")
    second = QualitySample.objects.create(
        drawn_at=first.drawn_at, week=first.week, drawn_by="earlier draw", candidates=1
    )
    again = QualitySampleItem.objects.get(pk=twice.pk)
    again.pk, again.sample = None, second
    again.save()

    _mark(editor_client, twice, "wrong")
    _mark(editor_client, other, "wrong")
    _mark(editor_client, again, "correct")
    overall, metric = _overall(editor_client, settings)
    assert "1 correct of 2 marked" in overall
    assert metric == pytest.approx(0.5)

    _mark(editor_client, twice, "wrong")  # marked again later: now the latest mark is wrong
    overall, metric = _overall(editor_client, settings)
    assert "0 correct of 2 marked" in overall
    assert metric == pytest.approx(0.0)
