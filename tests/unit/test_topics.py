"""The catalogue of the airline's keys: labels in both languages, the readable fallback, and
the two texts generated from it (the extraction prompt's list, SKILL.md's table)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import translation

from memoryadmin.extraction.prompts import AIRLINE_PROMPT
from memoryadmin.facts.choices import Category
from memoryadmin.facts.topics import CATALOGUE, topic_for, topic_label

pytestmark = pytest.mark.unit

SKILL = Path(__file__).resolve().parents[2] / "client" / "memoryadmin_client" / "SKILL.md"


def test_every_entry_is_whole_and_every_key_and_alias_is_unique():
    names = [name for topic in CATALOGUE for name in (topic.key, *topic.aliases)]
    assert len(names) == len(set(names))
    for topic in CATALOGUE:
        assert topic.key.isascii() and topic.key == topic.key.lower() and " " not in topic.key
        assert topic.en and topic.zh_hant and topic.use_when
        assert not topic.zh_hant.isascii(), topic.key  # written in Chinese, not copied
        assert topic.category in Category.values


@pytest.mark.parametrize(
    ("language", "label"), [("en", "Seat preference"), ("zh-hant", "座位偏好")]
)
def test_a_catalogue_key_reads_as_its_label_in_the_active_language(language, label):
    with translation.override(language):
        assert topic_label("seat_preference") == label
        assert topic_label("overnight_flight") == topic_label("overnight_flights")  # an alias


def test_any_other_key_is_made_readable_and_a_chinese_key_is_shown_as_it_is():
    with translation.override("zh-hant"):
        assert topic_label("window_seat_notes") == "Window seat notes"
        assert topic_label("seat.pref-2") == "Seat pref 2"
        assert topic_label("座位偏好") == "座位偏好"
        assert topic_label("___") == "___"
    assert topic_for("window_seat_notes") is None


def test_the_prompt_lists_every_catalogue_key_and_health_keys_only_on_request():
    lines = {line.strip() for line in AIRLINE_PROMPT.splitlines()}
    for topic in CATALOGUE:
        line = next(line for line in lines if line.startswith(f"- {topic.key} ("))
        assert f"({topic.category.value})" in line
        assert ("only if the traveller asks to have it remembered" in line) == topic.health


def test_skill_md_carries_the_current_table(capsys):
    call_command("skill_topics", "--check", file=SKILL)
    text = SKILL.read_text(encoding="utf-8")
    for topic in CATALOGUE:
        assert f"| `{topic.key}` | {topic.en} | {topic.zh_hant} |" in text


def test_the_check_fails_on_a_stale_copy_and_the_command_rewrites_it(tmp_path):
    stale = tmp_path / "SKILL.md"
    shutil.copy(SKILL, stale)
    stale.write_text(
        stale.read_text(encoding="utf-8").replace("| 座位偏好 |", "| 座位 |"), encoding="utf-8"
    )
    with pytest.raises(SystemExit) as exited:
        call_command("skill_topics", "--check", file=stale)
    assert exited.value.code == 1
    call_command("skill_topics", file=stale)
    assert stale.read_text(encoding="utf-8") == SKILL.read_text(encoding="utf-8")
    call_command("skill_topics", "--check", file=stale)
