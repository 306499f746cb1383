"""Scenario "filter": the write filter against hostile input. Every agent write passes through
`MemoryWriteFilter`; a privacy admin's careless pattern must not let one value hold a worker.
A 200-character hostile value (the classic inputs that make a backtracking matcher explode)
against 50 blocked patterns (the classic catastrophic ones among them), compiled by RE2, beside
the same value against the built-in rules alone (the baseline). Target: every check at most
1 ms, the worst case included. Each check is timed in this thread's CPU time: on shared cores
the wall clock of a 50-microsecond call mostly measures when the scheduler ran something else.

No database: `python -m bench.scenarios.filter` runs it on its own (also in `run.py --only
filter`)."""

from __future__ import annotations

import os
import statistics
import time

from bench.harness import Row

# Patterns that take exponential time on a backtracking engine, and plain ones around them.
CATASTROPHIC = [
    r"(a+)+$",
    r"(a|aa)+$",
    r"(a|a?)+b$",
    r"(.*a){12}$",
    r"(a*)*b",
    r"(x+x+)+y",
    r"^(\w+\s?)+$",
    r"^([a-zA-Z0-9])(([\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}$",
    r"(\d+)*\.$",
    r"^(([a-z])+.)+[A-Z]([a-z])+$",
]
PLAIN = [rf"loyalty\s*code\s*{n:02d}\w+" for n in range(40)]
PATTERNS = CATASTROPHIC + PLAIN  # 50
HOSTILE_VALUES = [
    "a" * 199 + "!",
    "x" * 199 + "!",
    ("word " * 40)[:199] + "!",
    "1" * 199 + "!",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b" * 6 + "a" * 7 + "!",
]


def measure(n: int) -> dict[str, list[float]]:
    from memoryadmin.facts.validation import MemoryWriteFilter

    hostile = MemoryWriteFilter(PATTERNS)
    builtin = MemoryWriteFilter()
    assert len(PATTERNS) == 50 and all(len(v) == 200 for v in HOSTILE_VALUES)
    samples: dict[str, list[float]] = {"builtin": [], "hostile": []}
    for index in range(n):
        value = HOSTILE_VALUES[index % len(HOSTILE_VALUES)]
        for name, write_filter in (("builtin", builtin), ("hostile", hostile)):
            started = time.thread_time()
            write_filter.check("note", value)
            samples[name].append(time.thread_time() - started)
    return samples


def scenario_filter(ctx: object, rows: list[Row]) -> None:
    samples = measure(max(200, getattr(ctx, "n", 400)))
    base = Row("filter", "built-in rules, 200-char hostile value", samples["builtin"])
    rows.append(base)
    rows.append(
        Row(
            "filter",
            "50 patterns (10 catastrophic), same value",
            samples["hostile"],
            baseline=base,
            target=f"worst <= 1 ms: {max(samples['hostile']) * 1e3:.3f} ms",
        )
    )


def main() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    django.setup()
    samples = measure(int(os.environ.get("BENCH_FILTER_N", "2000")))
    for name, got in samples.items():
        print(
            f"{name:8} p50 {statistics.median(got) * 1e3:.3f} ms  "
            f"p99 {sorted(got)[int(0.99 * len(got))] * 1e3:.3f} ms  "
            f"worst {max(got) * 1e3:.3f} ms  ({len(got)} checks)"
        )


if __name__ == "__main__":
    main()
