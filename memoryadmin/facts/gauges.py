"""The gauges only `facts` can read, registered with observability from `FactsConfig.ready()`.
Read at most once a minute (observability/gauges.py), never on a request's path."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count, Min
from django.utils import timezone

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


def register() -> None:
    register_gauge_source("memoryadmin_facts", fact_counts)
    register_gauge_source("memoryadmin_sweep_lag_seconds", sweep_lag)
