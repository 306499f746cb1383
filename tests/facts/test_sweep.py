"""The retention sweeps, in-process: what they erase and keep, who the history says did it, two
sweeps at once, and a statement count proportional to chunks (200 of them)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memoryadmin.api.models import IdempotencyRecord, ServiceToken
from memoryadmin.facts import erasure, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import (
    ActorKind,
    EventAction,
    FactEvent,
    MemoryFact,
    MemorySettings,
    RetentionRule,
)
from memoryadmin.facts.tasks import sweep_audit, sweep_expired
from tests.support.bulk import Row, load_facts
from tests.support.dbscan import occurrences
from tests.support.writes import agent_upsert

STAFF = Actor.system("test-staff")


def expire(subject_id: str, key: str) -> None:
    services.fact_set_expiry(
        subject_id=subject_id,
        key=key,
        expires_at=timezone.now() - timedelta(minutes=1),
        actor=STAFF,
    )


@pytest.mark.django_db
def test_the_sweep_erases_expired_facts_everywhere_but_spares_held_travellers():
    RetentionRule.objects.create(name="meals for a day", key_glob="meal_*", ttl_days=1)
    old = timezone.now() - timedelta(days=3)
    load_facts(
        [
            Row(
                "ruled-1",
                "meal_note",
                "Rule-expired vegan Kq2",
                updated_at=old,
                expires_at=old + timedelta(days=1),
            )
        ]
    )
    agent_upsert("pinned-1", ("seat_note", "Pinned aisle Wz4"), ("bag_note", "Keeps this Pm1"))
    expire("pinned-1", "seat_note")
    agent_upsert("held-1", ("seat_note", "Held window Hx8"))
    expire("held-1", "seat_note")
    services.subject_set_legal_hold(subject_id="held-1", hold=True, actor=STAFF, reason="case 7")
    token = ServiceToken.objects.create(name="t", token_hash="x" * 64, prefix="mat_xxxx")
    IdempotencyRecord.objects.create(
        token=token,
        key="k1",
        subject_id="pinned-1",
        method="PUT",
        path="/p",
        request_hash="h",
        status_code=201,
        response_body={"value": "Pinned aisle Wz4"},
    )

    assert sweep_expired.apply().get() == 2

    for gone in ("Rule-expired vegan Kq2", "Pinned aisle Wz4", "meal_note"):
        assert occurrences(gone) == {}, gone
    assert set(occurrences("Held window Hx8")) == {"memory_fact", "memory_fact_event"}
    assert occurrences("Keeps this Pm1") == {"memory_fact": 1, "memory_fact_event": 1}
    deleted = {e.subject_id: e for e in FactEvent.objects.filter(action=EventAction.DELETED)}
    assert set(deleted) == {"ruled-1", "pinned-1"}
    assert deleted["ruled-1"].actor_kind == ActorKind.RETENTION
    assert deleted["ruled-1"].actor_label == "rule:meals for a day"
    assert deleted["ruled-1"].key == erasure.key_digest("ruled-1", "meal_note")
    assert deleted["pinned-1"].actor_label == "rule:expiry date set by a person"
    assert sweep_expired.apply().get() == 0  # nothing left: a second run is a no-op


def _history(*subjects: str) -> list[tuple[str, str, str]]:
    return sorted(
        FactEvent.objects.filter(subject_id__in=subjects).values_list("subject_id", "key", "action")
    )


@pytest.mark.django_db
def test_the_audit_sweep_drops_old_history_except_held_travellers_and_live_facts():
    """The sweep keeps what the drop by month keeps (sql.EVENTS_KEPT_PAST_RETENTION): since
    issue 31 that includes a live fact's old events; an erased fact's old events still go."""
    MemorySettings.objects.update_or_create(pk=1, defaults={"audit_retention_days": 30})
    agent_upsert("audit-1", ("seat", "Aisle"), ("meal", "Vegan"))
    services.fact_delete(subject_id="audit-1", key="seat", actor=STAFF)  # erased: key hashed
    agent_upsert("audit-held", ("seat", "Window"))
    services.subject_set_legal_hold(subject_id="audit-held", hold=True, actor=STAFF, reason="c")
    old = timezone.now() - timedelta(days=31)
    FactEvent.objects.filter(subject_id__in=["audit-1", "audit-held"]).update(created_at=old)
    agent_upsert("audit-new", ("seat", "Middle"))  # recent: not the sweep's
    digest = erasure.key_digest("audit-1", "seat")
    erased = [e for e in _history("audit-1") if e[1] == digest]
    live = [e for e in _history("audit-1") if e[1] == "meal"]
    held = _history("audit-held")
    assert len(erased) == 2 and live and held  # the erased fact: created, then deleted

    assert sweep_audit.apply().get() == len(erased)

    assert _history("audit-1") == live  # the live fact's history outlives the retention
    assert _history("audit-held") == held  # on hold: all of it
    assert _history("audit-new") != []
    assert services.events_sweep_old().done == 0  # nothing left to sweep


@pytest.mark.django_db(transaction=True)
def test_two_sweeps_at_once_erase_each_fact_once():
    past = timezone.now() - timedelta(hours=1)
    load_facts([Row(f"two-{n:04d}", "seat", f"Value {n}", expires_at=past) for n in range(300)])
    locked = threading.Event()
    release = threading.Event()
    first: list[int] = []

    def slow_sweep() -> None:
        try:
            with transaction.atomic():  # holds its 100 rows until released
                first.append(services.facts_sweep_expired(limit=100).done)
                locked.set()
                release.wait(20)
        finally:
            connection.close()

    thread = threading.Thread(target=slow_sweep)
    thread.start()
    assert locked.wait(20)
    second = services.facts_sweep_expired(limit=1000).done  # skips the locked rows
    release.set()
    thread.join(20)
    assert first == [100] and second == 200
    assert MemoryFact.objects.count() == 0
    keys = list(FactEvent.objects.filter(action=EventAction.DELETED).values_list("subject_id"))
    assert len(keys) == len(set(keys)) == 300


@pytest.mark.django_db(transaction=True)  # each chunk commits, as in production
def test_statements_grow_with_chunks_not_with_facts(settings):
    """20,000 expired facts in chunks of 100: the statement count is a constant per chunk.
    (200 chunks as with 200,000 facts in the default chunks of 1,000, at a tenth of the load:
    a statement per fact or per erased row would show just the same.)"""
    settings.RETENTION_SWEEP_CHUNK_SIZE = 100
    past = timezone.now() - timedelta(hours=1)

    def sweep(n: int) -> int:
        load_facts(
            Row(f"big{n}-{i // 4:06d}", f"topic_{i % 4}", f"Bulk value {i}", expires_at=past)
            for i in range(n)
        )
        with CaptureQueriesContext(connection) as queries:
            assert sweep_expired.apply().get() == n
        assert not MemoryFact.objects.exists()
        return len(queries)

    small = sweep(500)  # 5 full chunks and an empty one
    large = sweep(20_000)  # 200 full chunks and an empty one
    per_chunk = (large - small) / (200 - 5)
    # BEGIN, the SELECT ... FOR UPDATE SKIP LOCKED, the enabled rules (who expired each fact),
    # one erasing statement (erasers included; with `DATABASE_PREPARED_WRITES`, the two that ask
    # for its generic plan and put the mode back travel with it, one round trip), COMMIT; then
    # the erasers' after-commit work (the webhook outbox's dispatch, which eager Celery runs
    # inline here): a fixed few more.
    assert per_chunk == int(per_chunk) and per_chunk <= 9 + 2 * settings.DATABASE_PREPARED_WRITES
    assert large == small + per_chunk * 195
    print(f"sweep of 20,000 facts: {large} statements, {per_chunk:.0f} per chunk")
