"""A sampled, marked fact that the traveller erases leaves no value, key or traveller in the
quality tables (pg_dump of the committed database), and its mark still counts."""

from __future__ import annotations

import pytest

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.keyhash import event_key_hash
from memoryadmin.quality.models import QualitySampleItem
from memoryadmin.quality.selectors import quality_report
from memoryadmin.quality.services import quality_mark_record, quality_sample_draw
from memoryadmin.staff.roles import EDITOR
from tests.quality.conftest import learn
from tests.staff.conftest import make_staff
from tests.support.pgdump import pg_dump_text

S = "FF-QUALITY-ERASE-1"
KEY = "zqx_lounge_habit"
VALUE = "Always waits in the zq9 lounge"


def _section(dump: str, table: str) -> str:
    start = dump.index(f"COPY public.{table} ")
    return dump[start : dump.index("\\.", start)]


@pytest.mark.django_db(transaction=True)  # committed, so that pg_dump sees it
def test_forget_everything_leaves_an_anonymous_mark_and_no_value_key_or_traveller():
    learn(S, KEY, VALUE)
    item = quality_sample_draw(actor=Actor.system("test")).items.get()
    quality_mark_record(
        actor=Actor.staff(make_staff("ursula", EDITOR)), item=item, mark="wrong", reason="one_off"
    )
    before = _section(pg_dump_text(), "quality_sample_item")
    assert S in before and event_key_hash(S, KEY) in before  # the dump does see the item

    services.subject_forget(subject_id=S, actor=Actor.customer(S), reason="forget")
    dump = pg_dump_text()
    assert VALUE not in dump and KEY not in dump
    items = _section(dump, "quality_sample_item")
    assert S not in items and event_key_hash(S, KEY) not in items
    item = QualitySampleItem.objects.get()
    assert (item.mark, item.reason, item.fact_id, item.subject_id) == ("wrong", "one_off", None, "")
    assert quality_report().overall.marked == 1
