"""The tables of bench/peers_turns.sh's runs as one Markdown table (issue 42): for each size,
side (before, after) and run, each read's p50 ratio to its raw statement and its p99, and the
delete's ratio to LangGraph's.

    .venv/bin/python bench/peers_summary.py bench/out/peers-*.txt
"""

from __future__ import annotations

import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROWS = {
    "get": "DjangoMemoryStore.get_facts",
    "tier one": "DjangoMemoryStore.tier_one",
    "search": "DjangoMemoryStore.search_facts",
    "delete vs LangGraph": "DjangoMemoryStore.delete_fact (erasure)",
    "upsert 3 vs LangGraph": "DjangoMemoryStore.upsert_facts 3 (audit)",
}
NAME = re.compile(r"peers-(?P<size>\w+)-(?P<side>before|after)-(?P<run>\d+)\.txt$")


def parse(path: Path) -> dict[str, tuple[float, float, float]]:
    """Operation -> (p50 ms, p99 ms, ratio) for the rows of ROWS."""
    found = {}
    for line in path.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 6:
            continue
        for label, operation in ROWS.items():
            if cells[1] == operation and cells[5].endswith("x"):
                found[label] = (float(cells[2]), float(cells[3]), float(cells[5][:-1]))
    return found


def main(paths: list[str]) -> int:
    runs: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for name in sorted(paths):
        match = NAME.search(name)
        if match:
            got = parse(Path(name))
            if got:
                runs[(match["size"], match["side"])].append(got)
    print("| size | side | runs | " + " | ".join(f"{label} p50 ratio" for label in ROWS) + " |")
    print("|---|---|---|" + "---|" * len(ROWS))
    for (size, side), got in sorted(runs.items(), key=lambda kv: (kv[0][0], kv[0][1] != "before")):
        cells = []
        for label in ROWS:
            ratios = [run[label][2] for run in got if label in run]
            each = ", ".join(f"{r:.2f}" for r in ratios)
            cells.append(f"**{statistics.median(ratios):.2f}x** ({each})" if ratios else "")
        print(f"| {size} | {side} | {len(got)} | " + " | ".join(cells) + " |")
    print()
    print("| size | side | " + " | ".join(f"{label} p99 ms" for label in ROWS) + " |")
    print("|---|---|" + "---|" * len(ROWS))
    for (size, side), got in sorted(runs.items(), key=lambda kv: (kv[0][0], kv[0][1] != "before")):
        cells = []
        for label in ROWS:
            p99s = [run[label][1] for run in got if label in run]
            cells.append(", ".join(f"{p:.2f}" for p in p99s))
        print(f"| {size} | {side} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
