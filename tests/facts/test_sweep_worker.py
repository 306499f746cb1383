"""The sweep with real Celery workers and beat on Redis: facts expire and are erased from every
table, held travellers stay, two sweeps at once erase each fact once, and a sweep whose worker is
killed after its first chunk is finished by the next run with nothing lost or done twice."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from memoryadmin.api.models import IdempotencyRecord, ServiceToken
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import ActorKind, EventAction, FactEvent, MemoryFact
from memoryadmin.facts.services import FactDraft
from memoryadmin.facts.tasks import sweep_expired
from tests.extraction.worker import Worker, publishing_to, wait_for
from tests.support.beat import Beat
from tests.support.bulk import Row, load_facts
from tests.support.dbscan import occurrences

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
STAFF = Actor.system("test-staff")


@pytest.fixture
def broker_url() -> Iterator[str]:
    url = os.environ["TEST_BROKER_URL"]
    redis.Redis.from_url(url).flushdb()  # no task left over from an earlier test
    yield url
    redis.Redis.from_url(url).flushdb()


@pytest.fixture
def start(broker_url: str) -> Iterator:
    started: list[Worker | Beat] = []

    def run(kind: type, **env: str) -> Worker | Beat:
        options = {"name": f"sweeper{len(started)}"} if kind is Worker else {}
        process = kind(broker_url=broker_url, env=env, **options).start()
        started.append(process)
        return process

    yield run
    for process in started:
        process.stop()


def expired_rows(prefix: str, n: int) -> list[Row]:
    past = timezone.now() - timedelta(hours=1)
    return [
        Row(f"{prefix}-{i:05d}", "seat_note", f"{prefix} value {i}", expires_at=past)
        for i in range(n)
    ]


def erased_once(prefix: str, n: int) -> None:
    deleted = list(
        FactEvent.objects.filter(
            action=EventAction.DELETED, subject_id__startswith=prefix
        ).values_list("subject_id", "key")
    )
    assert len(deleted) == len(set(deleted)) == n


def test_beat_and_a_worker_erase_expired_facts_from_every_table_but_not_held_ones(start):
    services.fact_upsert(
        subject_id="beat-a", facts=[FactDraft("seat_note", "Beat swept aisle Qm3")], actor=STAFF
    )
    services.fact_upsert(
        subject_id="beat-held", facts=[FactDraft("seat_note", "Held on Lv5")], actor=STAFF
    )
    for subject_id in ("beat-a", "beat-held"):
        services.fact_set_expiry(
            subject_id=subject_id,
            key="seat_note",
            actor=STAFF,
            expires_at=timezone.now() - timedelta(minutes=5),
        )
    services.subject_set_legal_hold(
        subject_id="beat-held", hold=True, actor=STAFF, reason="litigation 12"
    )
    token = ServiceToken.objects.create(name="host", token_hash="b" * 64, prefix="mat_bbbb")
    IdempotencyRecord.objects.create(
        token=token,
        key="k",
        subject_id="beat-a",
        method="PUT",
        path="/x",
        request_hash="h",
        status_code=201,
        response_body={"value": "Beat swept aisle Qm3"},
    )

    start(Worker)
    start(Beat, RETENTION_SWEEP_INTERVAL_SECONDS="1")
    wait_for(lambda: not MemoryFact.objects.filter(subject_id="beat-a").exists(), timeout=60)

    assert occurrences("Beat swept aisle Qm3") == {}
    assert MemoryFact.objects.filter(subject_id="beat-held").count() == 1
    event = FactEvent.objects.get(subject_id="beat-a", action=EventAction.DELETED)
    assert event.actor_kind == ActorKind.RETENTION


def test_two_sweeps_at_once_on_two_workers_erase_each_fact_once(start, broker_url):
    load_facts(expired_rows("twice", 6000))
    start(Worker, RETENTION_SWEEP_CHUNK_SIZE="500")
    start(Worker, RETENTION_SWEEP_CHUNK_SIZE="500")
    with publishing_to(broker_url):
        sweep_expired.delay()
        sweep_expired.delay()
    wait_for(lambda: not MemoryFact.objects.exists(), timeout=120, interval=0.5)
    erased_once("twice", 6000)


def test_a_sweep_killed_after_its_first_chunk_is_finished_by_the_next_run(start, broker_url):
    load_facts(expired_rows("killed", 350))
    first = start(Worker, RETENTION_SWEEP_CHUNK_SIZE="100", RETENTION_SWEEP_PAUSE_SECONDS="60")
    with publishing_to(broker_url):
        sweep_expired.delay()
    wait_for(lambda: MemoryFact.objects.count() <= 250, timeout=60)
    first.process.kill()  # SIGKILL, between chunks: the next chunk was queued for later
    first.process.wait(10)
    assert MemoryFact.objects.count() == 250
    erased_once("killed", 100)

    start(Worker, RETENTION_SWEEP_CHUNK_SIZE="100")
    with publishing_to(broker_url):
        sweep_expired.delay()  # the next scheduled run
    wait_for(lambda: not MemoryFact.objects.exists(), timeout=60)
    erased_once("killed", 350)
