"""The weekly sample: learned facts of the last 7 days only, stratified by category and
language, at most one per traveller, its size a setting, each item with the job's model and
prompt version."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from memoryadmin.extraction.prompts import PROMPT_VERSION, prompt_version
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import MemoryFact
from memoryadmin.quality.language import value_language
from memoryadmin.quality.services import _quotas, quality_sample_draw
from memoryadmin.quality.tasks import quality_draw_task
from tests.quality.conftest import learn

pytestmark = pytest.mark.django_db
SYSTEM = Actor.system("test")


def test_the_language_of_a_value():
    assert value_language("Prefers an aisle seat") == "en"
    assert value_language("偏好靠走道座位") == "zh-Hant"
    assert value_language("Prefiere asiento de pasillo, sin escalas más de 2 h") == "other"
    assert value_language("通路側の席がいい") == "other"  # Japanese kana


def test_each_stratum_gives_one_then_in_proportion():
    assert _quotas({("a", "en"): 90, ("b", "en"): 10}, 10) == {("a", "en"): 9, ("b", "en"): 1}
    assert _quotas({("a", "en"): 98, ("b", "en"): 1, ("c", "en"): 1}, 5) == {
        ("a", "en"): 3,
        ("b", "en"): 1,
        ("c", "en"): 1,
    }
    assert _quotas({("a", "en"): 2}, 5) == {("a", "en"): 2}


def test_the_draw_is_stratified_by_category_and_language_one_fact_per_traveller():
    # 40 English preferences, and 2 of each of three rarer strata: proportional alone would
    # take only English preferences for a sample of 4.
    for n in range(40):
        learn(f"FF-EN-{n:03d}", "seat_preference", "Prefers an aisle seat")
    for n in range(2):
        learn(f"FF-ZH-{n:03d}", "seat_preference", "偏好靠窗座位")
        learn(f"FF-CX-{n:03d}", "travel_party", "Travels with a spouse", "context")
        learn(f"FF-ZC-{n:03d}", "travel_party", "和太太一起旅行", "context")
    # One traveller with many facts: at most one of them.
    for key in ("meal", "bags", "airport", "connections", "overnight"):
        learn("FF-MANY", key, "Something durable about " + key)
    sample = quality_sample_draw(actor=SYSTEM, size=4, seed=1)
    items = list(sample.items.all())
    assert len(items) == 4
    assert Counter((i.category, i.language) for i in items) == {
        ("preference", "en"): 1,
        ("preference", "zh-Hant"): 1,
        ("context", "en"): 1,
        ("context", "zh-Hant"): 1,
    }
    big = quality_sample_draw(actor=SYSTEM, size=60, seed=2)
    subjects = [i.subject_id for i in big.items.all()]
    # A second draw in the week takes only facts the first did not, still one per traveller.
    first = {i.fact_id for i in items}
    assert not first & {i.fact_id for i in big.items.all()}
    left = MemoryFact.objects.exclude(id__in=first).values("subject_id").distinct().count()
    assert len(subjects) == len(set(subjects)) == left
    assert (sample.candidates, big.candidates) == (51, 47)


def test_the_size_is_a_setting(settings):
    for n in range(8):
        learn(f"FF-S-{n:03d}", "seat_preference", "Prefers an aisle seat")
    settings.QUALITY_SAMPLE_SIZE = 3
    assert quality_sample_draw(actor=SYSTEM).items.count() == 3
    settings.QUALITY_SAMPLE_SIZE = 50
    assert quality_sample_draw(actor=SYSTEM).items.count() == 5  # the 5 not drawn this week


def test_only_facts_learned_by_extraction_or_the_agent_in_the_last_7_days():
    learn("FF-W-1", "seat_preference", "Prefers an aisle seat")
    learn("FF-W-2", "meal", "Vegetarian by choice", by="agent")
    services.fact_upsert(
        subject_id="FF-W-3",
        facts=[services.FactDraft("bags", "Carry-on only")],
        actor=Actor.system("import"),
    )
    sample = quality_sample_draw(actor=SYSTEM)
    assert sorted(i.subject_id for i in sample.items.all()) == ["FF-W-1", "FF-W-2"]
    later = quality_sample_draw(actor=SYSTEM, now=timezone.now() + timedelta(days=7, minutes=1))
    assert later.items.count() == 0 and later.candidates == 0


def test_each_item_names_the_model_and_prompt_version_that_learned_it():
    learn("FF-M-1", "seat_preference", "Prefers an aisle seat", model="claude-haiku-test")
    learn("FF-M-2", "meal", "Vegetarian by choice", by="agent")
    items = {i.subject_id: i for i in quality_sample_draw(actor=SYSTEM).items.all()}
    assert (items["FF-M-1"].origin, items["FF-M-1"].model) == ("extraction", "claude-haiku-test")
    assert items["FF-M-1"].prompt_version == PROMPT_VERSION
    assert (items["FF-M-2"].origin, items["FF-M-2"].model) == ("agent", "agent")
    assert items["FF-M-2"].prompt_version == "agent"


def test_the_prompt_version_changes_with_the_prompt():
    assert len(PROMPT_VERSION) == 12
    assert prompt_version("one prompt", {}) != prompt_version("one prompt.", {})
    assert prompt_version("one prompt", {}) == prompt_version("one prompt", {})


def test_beat_and_the_command_draw_too(capsys):
    learn("FF-B-1", "seat_preference", "Prefers an aisle seat")
    assert quality_draw_task() == 1
    learn("FF-B-2", "seat_preference", "Prefers a window seat")
    call_command("quality_draw", "--size", "5")
    assert (
        "Drew 1 of 1 facts learned in the last 7 days and not yet sampled"
        in capsys.readouterr().out
    )


def test_beat_draws_weekly(settings):
    from memoryadmin.celery import app

    entry = settings.CELERY_BEAT_SCHEDULE["quality-sample-draw"]
    assert entry["task"] == "memoryadmin.quality.tasks.quality_draw_task"
    assert entry["schedule"] == 7 * 86400.0
    assert entry["task"] in app.tasks
