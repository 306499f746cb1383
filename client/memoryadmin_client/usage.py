"""Use receipts on the agent side: which facts the agent had in which turn, batched and sent
after the turn, off the agent's path.

`saved_memory_prompt(..., turn_id=...)` notes the keys it injected, `recall_memories` the keys it
returned, the MCP server both; each with the fact's version when the store's read gave one
(`MemoryFact.version`), so the receipt names the value the agent had. Noting is an append to a
list; the first note of a batch starts a background task that waits a moment (so the rest of
the turn's notes join it) and then hands the batch to the store's `record_uses`
(HttpMemoryStore: one POST .../usage per traveller; DjangoMemoryStore: one INSERT). A failure
is logged and the batch dropped: a receipt never fails or slows a turn. `flush_uses(store)`
sends what is pending now (a host shutting down, a test).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

BATCH_DELAY_SECONDS = 0.05
MAX_PENDING_TURNS = 10_000  # beyond this (a store that is down), new notes are dropped


# One fact the agent had: its key, or {"key": ..., "version": n} when the read said which
# version it was (the receipt then records that version, not the one current when it arrives).
Used = str | dict[str, Any]


def _usable(item: Any) -> bool:
    if isinstance(item, str):
        return bool(item)
    return isinstance(item, dict) and isinstance(item.get("key"), str) and bool(item["key"])


@dataclass
class _Turn:
    session_id: str
    turn_id: str
    injected: list[Used] = field(default_factory=list)
    recalled: list[Used] = field(default_factory=list)

    def body(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "turn_id": self.turn_id,
            "injected": self.injected,
            "recalled": self.recalled,
        }


class UseRecorder:
    """The pending receipts of one store, per traveller and turn."""

    def __init__(self, store: Any, *, delay: float = BATCH_DELAY_SECONDS) -> None:
        self._store = weakref.ref(store)
        self.delay = delay
        self._pending: dict[tuple[str, str, str], _Turn] = {}
        self._task: asyncio.Task[None] | None = None

    def note(
        self, subject_id: str, *, session_id: str, turn_id: str, how: str, keys: Iterable[Used]
    ) -> None:
        """Remember that the agent had `keys` (each a key, or a key with its version) in this
        turn; never raises, never awaits."""
        keys = [key for key in keys if _usable(key)]
        if not keys or not turn_id:
            return
        slot = (subject_id, session_id or "", turn_id)
        turn = self._pending.get(slot)
        if turn is None:
            if len(self._pending) >= MAX_PENDING_TURNS:
                return
            turn = self._pending[slot] = _Turn(session_id or "", turn_id)
        (turn.injected if how == "injected" else turn.recalled).extend(keys)
        self._schedule()

    def _schedule(self) -> None:
        if self._task is not None and not self._task.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop: flush() sends them
        self._task = loop.create_task(self._later())

    async def _later(self) -> None:
        """Wait a moment, send; again while notes arrived during the send."""
        while True:
            await asyncio.sleep(self.delay)
            await self.flush()
            if not self._pending:
                return

    async def flush(self) -> int:
        """Send everything pending: one call per traveller. Returns the turns handed over."""
        pending, self._pending = self._pending, {}
        store = self._store()
        record = getattr(store, "record_uses", None)
        if not pending or record is None:
            return 0
        by_subject: dict[str, list[dict[str, Any]]] = {}
        for (subject_id, _, _), turn in pending.items():
            by_subject.setdefault(subject_id, []).append(turn.body())
        for subject_id, turns in by_subject.items():
            try:
                await record(subject_id, turns)
            except Exception as exc:  # a receipt never fails a turn
                logger.warning("use receipts not sent: %s", type(exc).__name__)
        return len(pending)


_RECORDERS: weakref.WeakKeyDictionary[Any, UseRecorder] = weakref.WeakKeyDictionary()


def recorder_for(store: Any) -> UseRecorder:
    """The one recorder of a store (created on first use)."""
    recorder = _RECORDERS.get(store)
    if recorder is None:
        recorder = _RECORDERS[store] = UseRecorder(store)
    return recorder


async def flush_uses(store: Any) -> int:
    """Send the store's pending receipts now (and wait for a batch already on its way)."""
    recorder = recorder_for(store)
    sent = await recorder.flush()
    task = recorder._task
    if task is not None and not task.done() and task is not asyncio.current_task():
        await task  # a batch already on its way (it finds nothing more to send)
    return sent
