"""The Prometheus text of this deployment: the process metrics (added up over every process
that wrote them, in multiprocess mode) and, on the web, the database gauges."""

from __future__ import annotations

import os

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector


def multiprocess_dir() -> str:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")


def render(*, with_database_gauges: bool) -> bytes:
    if multiprocess_dir():
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
    else:  # one process (runserver, the tests' own process): its own registry
        registry = CollectorRegistry()
        registry.register(_ProcessMetrics())
    if with_database_gauges:
        from .gauges import DatabaseGauges

        registry.register(DatabaseGauges())
    return generate_latest(registry)


class _ProcessMetrics:
    """The default registry's metrics, as a collector of another registry."""

    def collect(self):  # noqa: ANN201 - prometheus-client's protocol
        return REGISTRY.collect()
