"""The memory quality gauges, registered with observability from `QualityConfig.
ready()` and read at most once per METRICS_GAUGE_REFRESH_SECONDS: the same figures as the
"Memory quality" page's overall line, its lines by category, language, origin, model and
prompt version, and its signals. No sample while nothing is marked (or nothing learned), so
the alert on the upper bound stays quiet rather than firing on 0."""

from __future__ import annotations

from memoryadmin.observability.gauges import Reading, register_gauge_source

from .selectors import quality_report, quality_signals


def _precision(part: str) -> list[Reading]:
    overall = quality_report().overall
    if not overall.marked:
        return []
    value = {"value": overall.value, "lower": overall.lower, "upper": overall.upper}[part]
    return [((), float(value or 0.0))]


def _precision_by(part: str) -> list[Reading]:
    """One sample per line of the page's tables, labelled by the dimension's column and the
    line's stored value ("none" for an empty model or prompt version)."""
    readings: list[Reading] = []
    for column, lines in quality_report().lines.items():
        for group, line in lines.items():
            value = {"value": line.value, "lower": line.lower, "upper": line.upper}[part]
            readings.append(((column, group or "none"), float(value or 0.0)))
    return readings


def _signal(part: str) -> list[Reading]:
    signals = quality_signals()
    value = getattr(signals, part)
    return [] if value is None else [((), float(value))]


def register() -> None:
    register_gauge_source("memoryadmin_memory_precision", lambda: _precision("value"))
    register_gauge_source("memoryadmin_memory_precision_lower", lambda: _precision("lower"))
    register_gauge_source("memoryadmin_memory_precision_upper", lambda: _precision("upper"))
    register_gauge_source("memoryadmin_memory_precision_by", lambda: _precision_by("value"))
    register_gauge_source("memoryadmin_memory_precision_by_lower", lambda: _precision_by("lower"))
    register_gauge_source("memoryadmin_memory_precision_by_upper", lambda: _precision_by("upper"))
    register_gauge_source(
        "memoryadmin_memory_corrected_per_1000", lambda: _signal("corrected_per_1000")
    )
    register_gauge_source(
        "memoryadmin_memory_staff_changed_per_1000", lambda: _signal("staff_changed_per_1000")
    )
