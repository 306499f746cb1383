"""What the services tell the metrics (observability/metrics.py): facts erased and writes the
filter refused, labelled by who asked, never by traveller, key or value. An erasure is counted
when its transaction commits, so a rolled-back one is not."""

from __future__ import annotations

from django.db import transaction

from memoryadmin.observability import metrics

from .actors import Actor
from .choices import ActorKind

_LABEL = {
    ActorKind.AGENT: "agent",
    ActorKind.STAFF: "staff",
    ActorKind.CUSTOMER: "traveller",
    ActorKind.EXTRACTION: "extraction",
    ActorKind.RETENTION: "retention_sweep",
    ActorKind.SYSTEM: "system",
}


def actor_label(actor: Actor) -> str:
    return _LABEL.get(actor.kind, metrics.OTHER)


def count_erased(path: str, amount: int, *, using_django: bool = True) -> None:
    """`path`: an actor's label, "retention_sweep" or "clear"."""
    if amount <= 0:
        return
    if using_django:
        transaction.on_commit(lambda: metrics.count_erasures(path, amount))
    else:  # the store's own connection, already committed
        metrics.count_erasures(path, amount)


def count_blocked(source: str, amount: int = 1) -> None:
    """Counted at once: a refusal is what happened, whatever the transaction does next."""
    metrics.count_write_filter_blocked(source, amount)
