"""Gauges read from the database at scrape time, not kept by any process: how many facts there
are, how old the oldest queued job is, how far the sweep lags, how many privacy requests are due.

`observability` imports no app, so each app registers the readers of its own tables from its
`AppConfig.ready()` with `register_gauge_source`. The readings are shared through Django's
cache (Redis in production) and refreshed at most once per METRICS_GAUGE_REFRESH_SECONDS
(60): however many workers Prometheus scrapes, however often, the database is asked once a
minute. A source that fails is logged by name (never its values) and left out of that
reading; the other gauges still come."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

# One reading: label values (in the gauge's label order) and the value.
Reading = tuple[tuple[str, ...], float]
Source = Callable[[], Iterable[Reading]]


@dataclass(frozen=True)
class GaugeSpec:
    name: str
    documentation: str
    labels: tuple[str, ...]


GAUGES: dict[str, GaugeSpec] = {
    spec.name: spec
    for spec in (
        GaugeSpec(
            "memoryadmin_facts",
            "Facts held, by category, status and sensitivity.",
            ("category", "status", "sensitive"),
        ),
        GaugeSpec(
            "memoryadmin_extraction_queue_oldest_seconds",
            "Age of the oldest extraction job not yet finished (0 when none).",
            (),
        ),
        GaugeSpec(
            "memoryadmin_sweep_lag_seconds",
            "Age of the oldest expired fact the retention sweep has not erased yet (0 when none).",
            (),
        ),
        # Read replicas (db/replicas.py), as the process that renders /metrics last saw
        # them: 1 up and close enough, 0 down or lagging; the seconds its replay is behind.
        GaugeSpec(
            "memoryadmin_database_replica_up",
            "1 when a read replica answers and is within DATABASE_REPLICA_MAX_LAG_SECONDS.",
            ("replica",),
        ),
        GaugeSpec(
            "memoryadmin_database_replica_lag_seconds",
            "Seconds a read replica's replay is behind (absent while it does not answer).",
            ("replica",),
        ),
        # Memory quality (quality/gauges.py), the "Memory quality" page's overall
        # figures; no sample while nothing is marked.
        GaugeSpec(
            "memoryadmin_memory_precision",
            "Share of the reviewed sample's facts marked correct (last 12 weeks).",
            (),
        ),
        GaugeSpec(
            "memoryadmin_memory_precision_lower",
            "Lower bound of the Wilson 95% interval of memory precision.",
            (),
        ),
        GaugeSpec(
            "memoryadmin_memory_precision_upper",
            "Upper bound of the Wilson 95% interval of memory precision.",
            (),
        ),
        # The page's lines by dimension: `dimension` is category, language, origin, model or
        # prompt_version; `group` the line's value (e.g. zh-Hant, a prompt version's hash).
        GaugeSpec(
            "memoryadmin_memory_precision_by",
            "Memory precision of one line of the quality page (last 12 weeks).",
            ("dimension", "group"),
        ),
        GaugeSpec(
            "memoryadmin_memory_precision_by_lower",
            "Lower bound of the Wilson 95% interval of one line's memory precision.",
            ("dimension", "group"),
        ),
        GaugeSpec(
            "memoryadmin_memory_precision_by_upper",
            "Upper bound of the Wilson 95% interval of one line's memory precision.",
            ("dimension", "group"),
        ),
        GaugeSpec(
            "memoryadmin_memory_corrected_per_1000",
            "Learned facts the traveller corrected or deleted within 30 days, per 1,000 learned.",
            (),
        ),
        GaugeSpec(
            "memoryadmin_memory_staff_changed_per_1000",
            "Learned facts staff rejected or edited, per 1,000 learned.",
            (),
        ),
        # The privacy app registers its source (privacy/apps.py); until then no sample.
        GaugeSpec(
            "memoryadmin_privacy_requests_due",
            "Open privacy requests due within 7 days, and overdue.",
            ("state",),
        ),
    )
}
CACHE_KEY = "observability:gauges:v1"

_sources: dict[str, Source] = {}


def register_gauge_source(name: str, source: Source) -> None:
    """Make `source()` the reader of gauge `name` (one of GAUGES). It returns
    `[((label values...), value), ...]`; it is called at most once per refresh period."""
    if name not in GAUGES:
        raise ValueError(f"unknown gauge {name!r}; declare it in GAUGES first")
    _sources[name] = source


def registered_gauge_source(name: str) -> Source | None:
    return _sources.get(name)


def unregister_gauge_source(name: str) -> None:
    _sources.pop(name, None)


def read_gauges() -> dict[str, list[Reading]]:
    """Every registered source, read now."""
    readings: dict[str, list[Reading]] = {}
    for name, source in list(_sources.items()):
        try:
            readings[name] = [
                (tuple(str(v) for v in labels), float(value)) for labels, value in source()
            ]
        except Exception:  # a broken gauge must not take the others (or /metrics) down
            logger.exception("gauge source %s failed", name)
    return readings


def cached_gauges() -> dict[str, list[Reading]]:
    """The last reading, if younger than the refresh period; else a new one (then shared)."""
    try:
        readings = cache.get(CACHE_KEY)
    except Exception:  # the cache is down: read directly rather than show nothing
        logger.warning("gauge cache unavailable; reading gauges directly")
        return read_gauges()
    if readings is None:
        readings = read_gauges()
        try:
            cache.set(CACHE_KEY, readings, timeout=settings.METRICS_GAUGE_REFRESH_SECONDS)
        except Exception:
            logger.warning("gauge cache unavailable; reading not shared")
    return readings


class DatabaseGauges(Collector):
    """The gauges above, for a registry that /metrics renders."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        readings = cached_gauges()
        for spec in GAUGES.values():
            family = GaugeMetricFamily(spec.name, spec.documentation, labels=list(spec.labels))
            for labels, value in readings.get(spec.name, []):
                family.add_metric(list(labels), value)
            yield family
