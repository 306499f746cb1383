"""Where a read goes: the read-your-writes decision, with no I/O (no Django, no Redis, no socket).

Two thin drivers gather its inputs and act on its answer: `replicas.py` for Django's connection
(the selectors' reads, the staff's and portal's pages) and `async_reads.py` for the store's
native async connections. Both call `decide` the same way:

1. with what this process knows (`Process`) and no traveller position: the answer is final
   (the primary: pinned, inside a transaction, no usable replica; or a replica the process's own
   copy of the position allows), or `ask`: the traveller's position is needed;
2. the driver looks in this process's copy (`Process.known`) and, if not there, reads Redis
   (`Written`), then calls `decide` again; `keep` says whether Redis's answer may be kept in the
   process's copy.

A replica is read only once its last look had replayed the traveller's last write; anything
unsure (Redis down, its map too young to trust, the process pinned) sends the read to the
primary (docs/ARCHITECTURE.md, "Read replicas").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Replica:
    """A replica as this process last looked at it."""

    alias: str
    replay_lsn: int | None
    usable: bool  # up, a standby, and close enough


@dataclass(frozen=True, slots=True)
class Written:
    """The traveller's last write position as Redis (or the local cache) tells it: a number
    (0: none recorded), or None: cannot tell (Redis down, or its map too young to trust)."""

    lsn: int | None


CANNOT_TELL = Written(None)
NONE_RECORDED = Written(0)


@dataclass(frozen=True, slots=True)
class Process:
    """What this process already knows before asking anyone."""

    known: int | None = None  # its own copy of the traveller's position (None: not known)
    pinned: bool = False  # it failed to record a write: primary only for a while
    in_transaction: bool = False  # the read shares a transaction open on the primary


@dataclass(frozen=True, slots=True)
class Route:
    """`alias`: the replica to read (None: the primary). `ask`: the traveller's position is
    needed first (call `decide` again with it). `keep`: the position given may be kept by this
    process (a definite answer from Redis)."""

    alias: str | None
    ask: bool = False
    keep: bool = False


TO_PRIMARY = Route(None)
ASK = Route(None, ask=True)


def decide(
    replicas: Sequence[Replica],
    process: Process,
    written: Written | None = None,
    *,
    turn: int = 0,
) -> Route:
    """Where this read goes. `written`: the traveller's position read from Redis (None: not
    asked yet). `turn` picks among the replicas that may serve it, so reads take turns."""
    if process.pinned or process.in_transaction:
        return TO_PRIMARY
    usable = [replica for replica in replicas if replica.usable]
    if not usable:  # nothing to route: Redis is not asked at all
        return TO_PRIMARY
    if process.known is not None:
        needed, keep = process.known, False
    elif written is None:
        return ASK
    elif written.lsn is None:
        return TO_PRIMARY
    else:
        needed, keep = written.lsn, True
    caught_up = [replica for replica in usable if (replica.replay_lsn or 0) >= needed]
    if not caught_up:
        return Route(None, keep=keep)
    return Route(caught_up[turn % len(caught_up)].alias, keep=keep)
