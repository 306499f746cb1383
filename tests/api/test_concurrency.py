"""Concurrent writers over the API: each write's response shows the state that write committed,
never a later writer's (the response is built from what the service wrote, not read again)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from memoryadmin.facts.models import EventAction, FactEvent, MemoryFact

from .conftest import facts_url

THREADS = 8
WRITES = 15
SUBJECT = "FF-busy"


def _hammer(secret: str, send) -> tuple[list, list]:
    results: list = []
    errors: list = []
    barrier = threading.Barrier(THREADS)

    def worker(thread: int) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        try:
            barrier.wait()
            for index in range(WRITES):
                value = f"Seat choice {thread}-{index}"
                results.append((value, send(client, value)))
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, errors


@pytest.mark.django_db(transaction=True)
def test_each_concurrent_put_answers_with_its_own_value_and_etag(make_agent):
    host = make_agent()
    results, errors = _hammer(
        host.secret,
        lambda client, value: client.put(
            facts_url(SUBJECT, "seat_preference"), {"value": value}, format="json"
        ),
    )
    assert errors == []
    assert len(results) == THREADS * WRITES
    versions = []
    for value, response in results:
        assert response.status_code in (200, 201), response.content
        assert response.json()["value"] == value  # what this request wrote
        versions.append(int(response["ETag"].strip('"')))
    # Every write was a real change: versions 1..N, each answered exactly once.
    assert sorted(versions) == list(range(1, THREADS * WRITES + 1))
    history = FactEvent.objects.filter(
        subject_id=SUBJECT, action__in=[EventAction.CREATED, EventAction.UPDATED]
    ).order_by("id")
    by_version = {event.after["version"]: event.after["value"] for event in history}
    assert all(
        by_version[version] == value for version, (value, _) in zip(versions, results, strict=True)
    )
    assert MemoryFact.objects.get(subject_id=SUBJECT).version == THREADS * WRITES


@pytest.mark.django_db(transaction=True)
def test_each_concurrent_batch_put_answers_with_the_state_it_committed(make_agent):
    host = make_agent()
    results, errors = _hammer(
        host.secret,
        lambda client, value: client.put(
            facts_url(SUBJECT),
            {"facts": [{"key": "seat_preference", "value": value}]},
            format="json",
        ),
    )
    assert errors == []
    for value, response in results:
        assert response.status_code == 200, response.content
        [fact] = response.json()["facts"]
        assert fact["value"] == value
