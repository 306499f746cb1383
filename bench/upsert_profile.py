"""Where the store's upsert spends its time (issue 30's peer comparison): 500 upserts of three
facts on the native async path, timed, then the same under cProfile, sorted by cumulative time.

    SECRET_KEY=... DATABASE_URL=postgres://.../ma_peers python bench/upsert_profile.py [--n 500]

The database is one `bench/run.py` loaded (it takes its first 200 travellers).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

import django  # noqa: E402

django.setup()


from bench.harness import WRITE_KEYS, make_store, profile_subjects  # noqa: E402
from memoryadmin_client.types import MemoryFact  # noqa: E402


async def _upserts(store: Any, subjects: list[str], n: int, tag: str) -> float:
    """Milliseconds an upsert, over n of them."""
    start = time.perf_counter()
    for i in range(n):
        facts = [MemoryFact(key=k, value=f"{tag} {i} {k}") for k in WRITE_KEYS]
        await store.upsert_facts(subjects[i % len(subjects)], facts)
    return (time.perf_counter() - start) / n * 1000


async def _main(subjects: list[str], n: int, lines: int) -> None:
    store = make_store(native=True)
    await _upserts(store, subjects, 50, "warm")
    print(f"{await _upserts(store, subjects, n, 'timed'):.3f} ms an upsert of 3, {n} upserts")
    profiler = cProfile.Profile()
    profiler.enable()
    profiled = await _upserts(store, subjects, n, "profiled")
    profiler.disable()
    print(f"{profiled:.3f} ms an upsert under the profiler")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--lines", type=int, default=45)
    args = parser.parse_args()
    subjects = profile_subjects()
    asyncio.run(_main(subjects, args.n, args.lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
