"""A small SVG chart drawn on the server: no JavaScript, no library, no inline style (CSS classes
colour the bars). The same numbers are in a table beside it for screen readers."""

from __future__ import annotations

from typing import Any

from .templatetags.staff_time import day as format_day

WIDTH = 720
HEIGHT = 160
TOP = 18  # room for the scale label
BOTTOM = 24  # room for the day labels
SERIES = ("learned", "changed", "deleted")


def activity_chart(
    series: list[dict[str, Any]], *, width: int = WIDTH, label_every: int = 7
) -> dict[str, Any]:
    """Stacked bars per day: learned at the bottom, then changed, then deleted. A phone gets a
    narrow drawing (`width=360`, fewer labels) so its text is not scaled down to a smudge."""
    days = len(series) or 1
    slot = width / days
    bar = max(slot * 0.7, 1)
    plot = HEIGHT - TOP - BOTTOM
    peak = max((sum(day[name] for name in SERIES) for day in series), default=0) or 1
    bars, labels = [], []
    for index, day in enumerate(series):
        x = round(index * slot + (slot - bar) / 2, 1)
        base = HEIGHT - BOTTOM
        for name in SERIES:
            height = round(day[name] / peak * plot, 1)
            if height:
                base -= height
                bars.append(
                    {
                        "x": x,
                        "y": round(base, 1),
                        "width": round(bar, 1),
                        "height": height,
                        "series": name,
                        "title": f"{format_day(day['day'])}: {day[name]} {name}",
                    }
                )
        if (days - 1 - index) % label_every == 0:  # today, and every week (or two) before it
            middle = x + bar / 2
            # the first and last labels keep inside the drawing instead of being cut in half
            anchor = "end" if middle > width - 24 else "start" if middle < 24 else "middle"
            labels.append(
                {
                    "x": round(middle, 1),
                    "text": f"{day['day'].day} {day['day']:%b}",
                    "anchor": anchor,
                }
            )
    return {
        "width": width,
        "height": HEIGHT,
        "bars": bars,
        "labels": labels,
        "label_y": HEIGHT - 6,
        "peak": peak if peak > 1 or any(sum(d[n] for n in SERIES) for d in series) else 0,
        "axis_y": HEIGHT - BOTTOM,
        "top": TOP,
        "scale_y": TOP - 5,
    }
