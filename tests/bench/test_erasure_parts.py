"""bench/erasure_parts.py cuts the store's delete function into the parts of an erasure, and
scenario 7 reports each against LangGraph's delete: each part must do what its label says (and no
more), or those rows measure something else."""

from __future__ import annotations

import pytest
from django.db import connection

from bench import erasure_parts
from memoryadmin.facts import erasure
from memoryadmin.facts.models import EventAction, FactEvent, MemoryFact
from tests.support.dbscan import occurrences
from tests.support.writes import agent_upsert

LABELS = erasure_parts.LABELS


def _delete_with(label: str, subject_id: str, key: str) -> list[tuple]:
    write = erasure_parts.writes()[label]
    _, params = erasure.erase_fact_write(
        subject_id, key, erasure_parts.ACTOR, action=EventAction.DELETED, reason="bench"
    )
    with connection.cursor() as cursor:
        if label != LABELS[3]:
            cursor.execute(write.create_sql)
        cursor.execute(write.call_sql, params)
        return cursor.fetchall()


def _erasure_events(subject_id: str) -> int:
    return FactEvent.objects.filter(subject_id=subject_id, action=EventAction.DELETED).count()


@pytest.mark.django_db
def test_each_part_does_what_its_label_says_and_no_more():
    for number, label in enumerate(LABELS):
        subject_id = f"part-{number}"
        agent_upsert(subject_id, ("seat_note", f"Aisle Pq{number}"))
        assert _delete_with(label, subject_id, "seat_note") == [(subject_id, "seat_note")]
        assert not MemoryFact.objects.filter(subject_id=subject_id).exists()
        assert _erasure_events(subject_id) == (0 if number == 0 else 1), label
        # The history is blanked from the third part on: its value stays before that.
        assert bool(occurrences(f"Pq{number}")) == (number < 2), label


@pytest.mark.django_db
def test_the_store_function_is_the_last_part_and_the_others_are_not_it():
    writes = erasure_parts.writes()
    store, _ = erasure.erase_fact_write(
        "x", "x", erasure_parts.ACTOR, action=EventAction.DELETED, reason=""
    )
    assert writes[LABELS[3]].name == store.name
    names = [writes[label].name for label in LABELS]
    assert len(set(names)) == len(names)
    assert all(name.startswith(erasure_parts.PREFIX) for name in names[:3])
