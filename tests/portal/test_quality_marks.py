"""A quality sample's mark is not a confirmation: the traveller's history never says a marked
fact was checked or confirmed, whatever the mark, in either language."""

from __future__ import annotations

import pytest

from memoryadmin.facts.actors import Actor
from memoryadmin.quality.services import quality_mark_record, quality_sample_draw
from memoryadmin.staff.roles import EDITOR
from tests.quality.conftest import learn
from tests.staff.conftest import make_staff

pytestmark = pytest.mark.django_db

S = "FF-QMARK-1"


@pytest.mark.parametrize("mark", ["wrong", "correct"])
def test_the_portal_never_calls_a_marked_fact_checked_or_confirmed(signed_in, mark):
    learn(S, "overnight_flights", "Avoids overnight flights")
    item = quality_sample_draw(actor=Actor.system("test")).items.get()
    quality_mark_record(
        actor=Actor.staff(make_staff("ursula", EDITOR)),
        item=item,
        mark=mark,
        reason="one_off" if mark == "wrong" else "",
    )
    english = signed_in(S).get("/portal/your-data").content.decode()
    assert "routine check" in english  # the history does list it, with no verdict
    for word in ("checked by our team", "confirm", "correct", "wrong", "One-off"):
        assert word not in english
    chinese = signed_in(S, language="zh-hant").get("/portal/your-data").content.decode()
    assert "例行抽查" in chinese
    for word in ("確認", "正確", "錯誤"):
        assert word not in chinese
