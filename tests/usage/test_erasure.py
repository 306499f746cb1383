"""Deleting is erasing, evidence and receipts included: after each erasure path, and after the
receipts expire, `pg_dump` of the whole database holds no quote and no key of the erased fact.
A fact's erasure leaves its receipts as tombstones (key hash, version, time: no value, key or
quote), so the turn can say a fact it used was erased; "forget everything" takes every receipt
and its turn id with it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.utils import timezone

from memoryadmin.extraction.services import job_create_or_get
from memoryadmin.facts import erasure, services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import MemoryFact
from memoryadmin.facts.services import FactDraft
from memoryadmin.facts.store import DjangoMemoryStore
from memoryadmin.usage.models import MemoryUse
from memoryadmin.usage.services import TurnUse, uses_record, uses_sweep_expired
from tests.support.pgdump import pg_dump_text

pytestmark = [pytest.mark.django_db(transaction=True)]

QUOTE = "I always want the Zq7quote aisle seat"
KEY = "zq7key_seat"
TURN = "zq7turn-1"
MARKERS = ("Zq7quote", "zq7key", "zq7turn")


def learn(subject_id: str, *, sensitive: bool = False) -> None:
    """A fact learned twice (two quotes in its history), a neighbour that stays, and receipts
    of both in a turn."""
    value = "Diabetic, needs the Zq7quote aisle" if sensitive else "Prefers aisle seats"
    services.fact_upsert(
        subject_id=subject_id,
        actor=Actor.extraction("job 1"),
        session_tag="0123456789ab",
        facts=[
            FactDraft(KEY, value, evidence=QUOTE),
            FactDraft("meal", "Vegetarian", evidence="vegetarian please"),
        ],
    )
    if not sensitive:
        services.fact_upsert(
            subject_id=subject_id,
            actor=Actor.extraction("job 2"),
            facts=[FactDraft(KEY, "Prefers aisle seats, front", evidence=f"{QUOTE}, front")],
        )
    uses_record(
        subject_id=subject_id,
        uses=[
            TurnUse(session_id="s-1", turn_id=TURN, injected=[KEY, "meal"], recalled=[KEY]),
        ],
    )
    # a later turn's receipts, still riding on its job (not yet recorded): they name the key
    job_create_or_get(
        subject_id=subject_id,
        session_tag="0123456789ab",
        turn_id="t-wait",
        messages=[],
        skip_reason="test",
        used={"injected": [KEY], "recalled": []},
    )
    assert all(marker in pg_dump_text() for marker in MARKERS)


def _native_delete(subject_id: str, loop: asyncio.AbstractEventLoop) -> None:
    assert erasure.native_ready(), "every eraser that applies to facts gave its SQL"
    store = DjangoMemoryStore(native=True, actor=Actor.agent("host-1"))
    assert asyncio.run_coroutine_threadsafe(store.delete_fact(subject_id, KEY), loop).result(10)


def _sweep(subject_id: str) -> None:
    services.fact_expire(subject_id=subject_id, key=KEY, actor=Actor.system("test"))
    services.facts_sweep_expired(now=timezone.now() + timedelta(seconds=1))


PATHS: dict[str, Callable[[str], None]] = {
    "agent_delete": lambda s: services.fact_delete(
        subject_id=s, key=KEY, actor=Actor.agent("host-1")
    ),
    "traveller_delete": lambda s: services.fact_delete(
        subject_id=s, key=KEY, actor=Actor.customer(s), reason="Don't use this"
    ),
    "staff_delete": lambda s: services.fact_delete(
        subject_id=s, key=KEY, actor=Actor.system("support"), reason="ticket 1"
    ),
    "retention_sweep": _sweep,
    "forget_everything": lambda s: services.subject_forget(subject_id=s, actor=Actor.customer(s)),
    "agent_clear": lambda s: services.subject_clear(subject_id=s, actor=Actor.agent("host-1")),
}


@pytest.mark.parametrize("path", list(PATHS))
def test_each_erasure_path_leaves_no_quote_key_or_receipt(path: str) -> None:
    subject_id = f"erase-{path}"
    learn(subject_id)
    PATHS[path](subject_id)
    dump = pg_dump_text()
    whole = path in ("forget_everything", "agent_clear")
    # The turn id stays only on the neighbour's receipt (that fact was not erased).
    gone = MARKERS if whole else MARKERS[:2]
    assert [marker for marker in gone if marker in dump] == []
    left = MemoryUse.objects.filter(subject_id=subject_id)
    if whole:
        assert not left.exists()
        return
    neighbour = MemoryFact.objects.get(subject_id=subject_id, key="meal")
    assert list(left.filter(erased_at__isnull=True).values_list("how", "fact_id")) == [
        ("injected", neighbour.pk)
    ]
    tombstones = left.filter(erased_at__isnull=False)
    assert sorted(tombstones.values_list("how", flat=True)) == ["injected", "recalled"]
    assert all(use.key_hash.startswith("#") and use.turn_id == TURN for use in tombstones)


def test_a_rejected_fact_takes_its_quote_and_receipts(editor) -> None:
    learn("erase-reject", sensitive=True)
    services.fact_reject(
        subject_id="erase-reject", key=KEY, actor=Actor.staff(editor), reason="not for memory"
    )
    dump = pg_dump_text()
    assert [marker for marker in MARKERS[:2] if marker in dump] == []
    live = MemoryUse.objects.filter(subject_id="erase-reject", erased_at__isnull=True)
    assert live.count() == 1  # the neighbour's; the rejected fact's are tombstones


def test_the_native_async_delete_erases_receipts_in_its_one_statement(host_loop) -> None:
    learn("erase-native")
    _native_delete("erase-native", host_loop)
    dump = pg_dump_text()
    assert [marker for marker in MARKERS[:2] if marker in dump] == []
    live = MemoryUse.objects.filter(subject_id="erase-native", erased_at__isnull=True)
    assert live.count() == 1  # the neighbour's
    assert MemoryUse.objects.filter(subject_id="erase-native").count() == 3  # and two tombstones


def test_receipts_go_when_they_expire(privacy_admin) -> None:
    learn("erase-expiry")
    services.use_retention_update(days=30, actor=Actor.staff(privacy_admin), reason="DPIA-7")
    MemoryUse.objects.filter(subject_id="erase-expiry").update(
        used_at=timezone.now() - timedelta(days=31)
    )
    uses_record(subject_id="erase-expiry", uses=[TurnUse("s-2", "recent", injected=["meal"])])
    deleted, more = uses_sweep_expired(limit=2)
    assert (deleted, more) == (2, True)
    assert uses_sweep_expired(limit=2) == (1, False)
    assert list(MemoryUse.objects.values_list("turn_id", flat=True)) == ["recent"]
    assert "zq7turn" not in pg_dump_text()
