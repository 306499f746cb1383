"""The portal's words in both languages (issue 23)."""

from __future__ import annotations

import pytest

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from tests.factories import FactFactory

from .conftest import A

pytestmark = pytest.mark.django_db


def test_chinese_sentences_join_without_a_space_and_quote_with_corner_brackets(signed_in):
    FactFactory(subject_id=A, key="seat_preference", value="長途航班偏好靠走道座位")
    services.subject_set_preferences(subject_id=A, memory_use_paused=True, actor=Actor.customer(A))
    body = signed_in(A, language="zh-TW").get("/portal/").content.decode()

    assert "暫停使用。</strong>您已關閉「讓 AI 客服使用記憶」。" in body
    assert "。 " not in body
    assert "「長途航班偏好靠走道座位」" in body  # screen-reader text of the change link
    assert "讓 AI 客服使用記憶" in body and "使用記得的內容" not in body


def test_english_keeps_its_spaces_and_the_switch_has_a_subject(signed_in):
    FactFactory(subject_id=A, key="seat_preference", value="Aisle seats")
    services.subject_set_preferences(subject_id=A, memory_use_paused=True, actor=Actor.customer(A))
    body = signed_in(A, language="en").get("/portal/").content.decode()

    assert "Not in use.</strong> You asked the assistant" in body
    assert "Let the assistant use what it remembers" in body
    assert "“Aisle seats”" in body


def test_with_nothing_left_the_paused_note_does_not_promise_to_keep_anything(signed_in):
    services.subject_set_preferences(subject_id=A, memory_use_paused=True, actor=Actor.customer(A))
    body = signed_in(A, language="en").get("/portal/").content.decode()
    assert "It keeps it, so you can turn this back on" not in body
    assert "You asked the assistant not to use what it remembers." in body


def test_learning_on_and_use_off_reads_but_in_chinese(signed_in):
    client = signed_in(A, language="zh-TW")
    client.post("/portal/choices", {"learn": "on"})
    body = client.get("/portal/").content.decode()
    assert "AI 客服可以從您的對話中學習。但回答時不會參考記得的內容。" in body
