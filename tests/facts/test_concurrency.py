"""Concurrent writers on real PostgreSQL: no lost update, no duplicate row, no error."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import EventAction, FactEvent, MemoryFact

THREADS = 16
WRITES = 50


@pytest.mark.django_db(transaction=True)
def test_sixteen_threads_upserting_one_key_leave_one_row_and_an_honest_version():
    assert connection.vendor == "postgresql"
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def writer(thread: int) -> None:
        try:
            start.wait()
            for index in range(WRITES):
                services.fact_upsert(
                    subject_id="busy-traveller",
                    facts=[
                        services.FactDraft("seat_preference", f"Seat choice {(thread + index) % 3}")
                    ],
                    actor=Actor.agent(f"host-{thread}"),
                )
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    [fact] = MemoryFact.objects.filter(subject_id="busy-traveller")
    changes = FactEvent.objects.filter(
        subject_id="busy-traveller", action__in=[EventAction.CREATED, EventAction.UPDATED]
    )
    assert fact.version == changes.count()
    assert changes.count() > THREADS  # the values did change many times
    # Each update's "before" is the previous "after": nobody overwrote a value they never saw.
    history = list(changes.order_by("id"))
    for previous, current in zip(history, history[1:], strict=False):
        assert current.before["value"] == previous.after["value"]
        assert current.before["value"] != current.after["value"]
    assert history[-1].after["value"] == fact.value
