"""The "Memory quality" page and its gauges: 8 correct of 10 marked is 80% (49% to 94%), on the
page and on /metrics; the signals that need no reviewer; a fixed number of queries whatever
the number of marks."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.observability import gauges
from memoryadmin.quality.models import QualitySample, QualitySampleItem
from memoryadmin.quality.selectors import quality_signals, wilson_interval
from memoryadmin.quality.services import quality_sample_draw
from memoryadmin.staff.roles import EDITOR
from tests.observability.scrape import samples, value
from tests.quality.conftest import learn
from tests.staff.conftest import make_staff

pytestmark = pytest.mark.django_db
# The session, the user, the role, the marks' one grouped query, the signals' one statement,
# the latest sample; with room for the frame's own (messages, the access-record writer).
PAGE_QUERIES = 8


def test_the_wilson_interval():
    low, high = wilson_interval(8, 10)
    assert (round(low, 2), round(high, 2)) == (0.49, 0.94)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    low, high = wilson_interval(10, 10)
    assert high == pytest.approx(1.0) and round(low, 2) == 0.72
    assert round(wilson_interval(0, 10)[1], 2) == 0.28


@pytest.fixture
def editor_client() -> Client:
    client = Client()
    client.force_login(make_staff("quinn", EDITOR))
    return client


def test_ten_marks_eight_correct_show_80_percent_on_the_page_and_in_metrics(
    learned_ten, editor_client, settings
):
    sample = quality_sample_draw(actor=Actor.system("test"))
    items = list(sample.items.order_by("id"))
    assert len(items) == 10
    for n, item in enumerate(items):
        wrong = n < 2
        response = editor_client.post(
            f"/staff/quality/sample/{item.pk}/mark/",
            {
                f"q{item.pk}-mark": "wrong" if wrong else "correct",
                f"q{item.pk}-reason": "not_said" if wrong else "",
            },
        )
        assert response.status_code == 302
    page = editor_client.get("/staff/quality/").content.decode()
    overall = re.search(r'data-stat="precision">(.*?)</li>', page, re.S).group(1)
    assert "<strong>80%</strong>" in overall
    assert "95% interval 49% to 94%; 8 correct of 10 marked" in overall
    assert "Not said by the traveller: 2" in page
    # The lines by dimension: the English agent-saved facts and the Chinese extracted ones.
    assert "none: saved by the agent" in page and "Traditional Chinese" in page

    settings.METRICS_ALLOWED_NETWORKS = ["10.20.0.0/16"]
    cache.delete(gauges.CACHE_KEY)
    text = Client(REMOTE_ADDR="10.20.3.4").get("/metrics").content.decode()
    cache.delete(gauges.CACHE_KEY)
    assert value(text, "memoryadmin_memory_precision") == pytest.approx(0.8)
    assert round(value(text, "memoryadmin_memory_precision_lower"), 2) == 0.49
    assert round(value(text, "memoryadmin_memory_precision_upper"), 2) == 0.94
    assert value(text, "memoryadmin_memory_corrected_per_1000") == 0.0
    # The lines by dimension, each against the marks counted here from the rows themselves.
    scraped = samples(text)
    for column in ("category", "language", "origin"):
        marked = QualitySampleItem.objects.exclude(mark="")
        for group in set(marked.values_list(column, flat=True)):
            line = marked.filter(**{column: group})
            correct, total = line.filter(mark="correct").count(), line.count()
            low, high = wilson_interval(correct, total)
            labels = (("dimension", column), ("group", group))
            assert scraped[("memoryadmin_memory_precision_by", labels)] == pytest.approx(
                correct / total
            )
            assert scraped[("memoryadmin_memory_precision_by_lower", labels)] == pytest.approx(low)
            assert scraped[("memoryadmin_memory_precision_by_upper", labels)] == pytest.approx(high)
    assert (
        "memoryadmin_memory_precision_by",
        (("dimension", "language"), ("group", "zh-Hant")),
    ) in scraped


def test_nothing_marked_gives_no_gauge_and_a_page_that_says_so(editor_client, settings):
    page = editor_client.get("/staff/quality/").content.decode()
    assert "nothing marked yet" in page and "(none drawn yet)" in page
    settings.METRICS_ALLOWED_NETWORKS = ["10.20.0.0/16"]
    cache.delete(gauges.CACHE_KEY)
    text = Client(REMOTE_ADDR="10.20.3.4").get("/metrics").content.decode()
    cache.delete(gauges.CACHE_KEY)
    assert "\nmemoryadmin_memory_precision_upper " not in text
    assert "# TYPE memoryadmin_memory_precision_upper gauge" in text


def test_the_signals_count_traveller_corrections_and_staff_changes_per_1000():
    learn("FF-SG-1", "seat_preference", "Prefers an aisle seat")
    learn("FF-SG-2", "meal", "Vegetarian by choice", by="agent")
    learn("FF-SG-3", "bags", "Carry-on only")
    learn("FF-SG-4", "airport", "Flies from Songshan")
    fact = services.fact_edit(
        subject_id="FF-SG-1",
        key="seat_preference",
        expected_version=1,
        value="Prefers a window seat",
        actor=Actor.customer("FF-SG-1"),
    )
    assert fact.version == 2
    services.fact_delete(subject_id="FF-SG-2", key="meal", actor=Actor.customer("FF-SG-2"))
    staff = Actor.staff(make_staff("sam", EDITOR))
    services.fact_edit(
        subject_id="FF-SG-3", key="bags", expected_version=1, value="One bag", actor=staff
    )
    signals = quality_signals()
    assert (signals.learned, signals.corrected, signals.staff_changed) == (4, 2, 1)
    assert signals.corrected_per_1000 == 500.0 and signals.staff_changed_per_1000 == 250.0
    assert signals.corrected_shown == "500.0"
    # Learned longer ago than the page looks back: not counted.
    assert quality_signals(now=timezone.now() + timedelta(weeks=13)).learned == 0


def _marks(count: int) -> None:
    """`count` marks on one sample, written straight to the table: the page must not care."""
    now = timezone.now()
    sample = QualitySample.objects.create(drawn_at=now, week=now.date(), drawn_by="bench")
    QualitySampleItem.objects.bulk_create(
        QualitySampleItem(
            sample=sample,
            category=("preference", "context", "constraint")[n % 3],
            language=("en", "zh-Hant", "other")[n % 3],
            origin=("extraction", "agent")[n % 2],
            model=f"model-{n % 4}",
            prompt_version=f"p{n % 5}",
            learned_at=now,
            mark="correct" if n % 10 else "wrong",
            reason="" if n % 10 else "one_off",
        )
        for n in range(count)
    )


def _page_queries(client: Client) -> int:
    with CaptureQueriesContext(connection) as context:
        response = client.get("/staff/quality/")
    assert response.status_code == 200
    return len(context.captured_queries)


def test_the_page_reads_in_a_fixed_number_of_queries(editor_client, django_assert_max_num_queries):
    _marks(10)
    with django_assert_max_num_queries(PAGE_QUERIES):
        editor_client.get("/staff/quality/")
    few = _page_queries(editor_client)
    _marks(990)
    many = _page_queries(editor_client)
    assert few == many
    page = editor_client.get("/staff/quality/").content.decode()
    assert "900 correct of 1000 marked" in page


def test_the_sample_page_reads_in_a_fixed_number_of_queries(
    editor_client, django_assert_max_num_queries
):
    for n in range(3):
        learn(f"FF-QC-{n}", "seat_preference", "Prefers an aisle seat")
    quality_sample_draw(actor=Actor.system("test"))
    with CaptureQueriesContext(connection) as few:
        editor_client.get("/staff/quality/sample/")
    for n in range(3, 30):
        learn(f"FF-QC-{n}", "seat_preference", "Prefers an aisle seat")
    quality_sample_draw(actor=Actor.system("test"))
    with django_assert_max_num_queries(len(few.captured_queries)):
        page = editor_client.get("/staff/quality/sample/").content.decode()
    assert page.count('class="decide mark"') == 27  # the latest draw: the 27 not drawn before
