"""Flatness of the agent's reads and writes from a small database to a large one, measured in
pairs (issue 31): p50 and p99 at 1 M facts against 10 M facts.

Measured one database after the other, the two p99s fall in different minutes of a shared
2-core machine, and their ratio says more about that minute's noise than about the data. Here
one process serves each database (`--serve`, its own DATABASE_URL), and this one hands them
the same call in turns, call by call, the first to go alternating; each child times only the
call itself. So both columns meet the same noise, and each call has a partner taken within a
millisecond of it.

    python bench/scale_compare.py \\
        --small postgres://postgres@127.0.0.1:5499/ma_scale_tenth --small-travellers 100000 \\
        --large postgres://postgres@127.0.0.1:5499/ma_scale --large-travellers 1000000 --n 3000

Both databases are loaded by bench/scale.py first (run both with the SECRET_KEY they were
loaded with). Prints a Markdown table: p50 and p99 of each side, their ratios, and the median
of the per-pair ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def serve() -> int:
    """A child: run the named operation on the named traveller for each line read, answer with
    its time in seconds."""
    sys.path.insert(0, str(HERE))
    import scale  # noqa: PLC0415  (Django is set up on import, with this process's DATABASE_URL)

    ops = scale.agent_ops(random.Random(os.getpid()))
    print(json.dumps(sorted(ops)), flush=True)
    for line in sys.stdin:
        name, subject = json.loads(line)
        start = time.perf_counter()
        ops[name](subject)
        took = time.perf_counter() - start
        print(took, flush=True)
    return 0


def _child(url: str) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": url}
    return subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _call(child: subprocess.Popen, name: str, subject: str) -> float:
    child.stdin.write(json.dumps([name, subject]) + "\n")
    child.stdin.flush()
    return float(child.stdout.readline())


def _p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--small")
    parser.add_argument("--large")
    parser.add_argument("--small-travellers", type=int, default=100_000)
    parser.add_argument("--large-travellers", type=int, default=1_000_000)
    parser.add_argument("--n", type=int, default=3000, help="pairs per operation")
    parser.add_argument("--warm", type=int, default=300, help="pairs per operation, not counted")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.serve:
        return serve()
    small, large = _child(args.small), _child(args.large)
    names = json.loads(small.stdout.readline())
    assert json.loads(large.stdout.readline()) == names
    rng = random.Random(args.seed)
    times: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in names}
    began = time.perf_counter()
    for round_ in range(args.warm + args.n):
        for name in names:
            pair = (
                (small, "S" + str(rng.randrange(1, args.small_travellers)).zfill(8)),
                (large, "S" + str(rng.randrange(1, args.large_travellers)).zfill(8)),
            )
            order = pair if round_ % 2 == 0 else pair[::-1]
            took = {id(child): _call(child, name, subject) for child, subject in order}
            if round_ >= args.warm:
                times[name][0].append(took[id(small)])
                times[name][1].append(took[id(large)])
    for child in (small, large):
        child.stdin.close()
        child.wait()
    print(
        f"{args.n} pairs per operation after {args.warm} warm-up pairs,"
        f" {time.perf_counter() - began:.0f} s, load {os.getloadavg()[0]:.1f}"
    )
    print()
    print(
        "| operation | p50 small (ms) | p50 large | ratio p50 | p99 small | p99 large | ratio p99"
        " | median pair ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        a, b = times[name]
        a50, b50 = statistics.median(a) * 1000, statistics.median(b) * 1000
        a99, b99 = _p99(a) * 1000, _p99(b) * 1000
        pairs = statistics.median(y / x for x, y in zip(a, b, strict=True))
        print(
            f"| {name} | {a50:.3f} | {b50:.3f} | {b50 / a50:.2f}x | {a99:.2f} | {b99:.2f}"
            f" | {b99 / a99:.2f}x | {pairs:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
