"""The gauges only `facts` can read, registered with observability from `FactsConfig.ready()`.
Read at most once a minute (observability/gauges.py), never on a request's path."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db.models import Count, Min
from django.utils import timezone

from memoryadmin import db
from memoryadmin.observability.gauges import Reading, register_gauge_source

from .models import MemoryFact


def fact_counts() -> Iterable[Reading]:
    """`memoryadmin_facts`: one GROUP BY over the facts (category, status and sensitivity only:
    no traveller, key or value)."""
    rows = (
        MemoryFact.objects.order_by()
        .values_list("category", "status", "sensitive")
        .annotate(n=Count("pk"))
    )
    return [
        ((category, status, "true" if sensitive else "false"), n)
        for category, status, sensitive, n in rows
    ]


def sweep_lag() -> Iterable[Reading]:
    """`memoryadmin_sweep_lag_seconds`: how long the oldest expired fact the sweep may erase
    (not under legal hold: the sweep's own condition) has been waiting; 0 when none."""
    now = timezone.now()
    oldest = MemoryFact.objects.filter(expires_at__lte=now, subject__legal_hold=False).aggregate(
        oldest=Min("expires_at")
    )["oldest"]
    return [((), max(0.0, (now - oldest).total_seconds()) if oldest else 0.0)]


def replica_up() -> list[Reading]:
    return [((s.alias,), 1.0 if s.usable else 0.0) for s in db.replica_states()]


def replica_lag() -> list[Reading]:
    return [((s.alias,), s.lag_seconds) for s in db.replica_states() if s.lag_seconds is not None]


def register() -> None:
    register_gauge_source("memoryadmin_facts", fact_counts)
    if settings.DATABASE_REPLICAS:
        register_gauge_source("memoryadmin_database_replica_up", replica_up)
        register_gauge_source("memoryadmin_database_replica_lag_seconds", replica_lag)
    register_gauge_source("memoryadmin_sweep_lag_seconds", sweep_lag)
