"""The benchmark suite: every scenario against its baseline, measured in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/ma_bench python bench/run.py --preset small

Loads the preset with bench/generate.py (COPY), then runs the scenarios and prints one table:
p50 and p99 latency, throughput, the baseline's p50 and the ratio. Cases of one scenario take
turns call by call, so noise from the other tenants of the machine hits them alike. Ratios are
the point: they stay comparable across machines.

Scenarios: 1 agent read (in-process and HTTP against gunicorn with 2 workers, plus throughput
under 32 clients against a constant JSON view), 2 agent write (upsert of 3 facts, delete),
3 search (heavy travellers), 7 peers (LangGraph's AsyncPostgresStore when installed). The
numbers and what is not measured are in bench/RESULTS.md. This file is the command line and
the order of the scenarios; each scenario is a module of bench/scenarios/, and what they share
(timing, turn-taking, the table, the HTTP client, gunicorn) is bench/harness.py.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

import django  # noqa: E402

from bench import generate  # noqa: E402
from bench.harness import Context, Row, print_table  # noqa: E402
from bench.scenarios.extraction import scenario_extraction  # noqa: E402
from bench.scenarios.fastpaths import scenario_fastpaths  # noqa: E402
from bench.scenarios.filter import scenario_filter  # noqa: E402
from bench.scenarios.pages import scenario_pages  # noqa: E402
from bench.scenarios.peers import scenario_peers  # noqa: E402
from bench.scenarios.reads import scenario_http, scenario_reads  # noqa: E402
from bench.scenarios.search import scenario_heavy_search  # noqa: E402
from bench.scenarios.sweep import scenario_sweep  # noqa: E402
from bench.scenarios.usage import scenario_usage  # noqa: E402
from bench.scenarios.writes import scenario_writes  # noqa: E402


async def run_async(ctx: Context, only: set[str]) -> list[Row]:
    import psycopg

    rows: list[Row] = []
    ctx.raw = await psycopg.AsyncConnection.connect(ctx.conninfo, autocommit=True)
    try:
        if "1" in only:
            await scenario_reads(ctx, rows)
        if "3" in only:
            await scenario_heavy_search(ctx, rows)
        if "2" in only:
            await scenario_writes(ctx, rows)
        if "http" in only:
            await scenario_http(ctx, rows)
        if "7" in only:
            await scenario_peers(ctx, rows)
        if "fastpaths" in only:
            await scenario_fastpaths(ctx, rows)
        if "8" in only:
            await scenario_usage(ctx, rows)
    finally:
        from memoryadmin.facts.store import DjangoMemoryStore

        await DjangoMemoryStore().aclose()
        await ctx.raw.close()
    return rows


def ensure_database(conninfo: str) -> None:
    """Create the benchmark database if it does not exist (never the one you work in)."""
    import psycopg
    from psycopg import sql

    info = psycopg.conninfo.conninfo_to_dict(conninfo)
    name = info.get("dbname")
    try:
        psycopg.connect(conninfo).close()
    except psycopg.OperationalError:
        with psycopg.connect(**{**info, "dbname": "postgres"}, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(generate.PRESETS), default="small")
    parser.add_argument("--n", type=int, default=400, help="calls per case")
    parser.add_argument("--load-seconds", type=float, default=8.0)
    parser.add_argument("--skip-load", action="store_true", help="reuse the loaded data")
    parser.add_argument(
        "--load-if-needed",
        action="store_true",
        help="load only when the database holds fewer facts than the preset (a loaded one is"
        " reused: `make bench-peers`)",
    )
    parser.add_argument("--only", default="1,2,3,http,5,6,7,8,filter,4")
    args = parser.parse_args()
    conninfo = generate.conninfo_from_env()
    ensure_database(conninfo)
    os.environ["MEMORY_STORE_NATIVE_ASYNC"] = "true"
    # The service baseline is called from the event loop on purpose (turn-taking), in sync.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    os.environ.setdefault("LOG_LEVEL", "WARNING")  # no per-job log lines in the table
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # as `make serve` does
    preset = generate.PRESETS[args.preset]
    if args.load_if_needed and not args.skip_load:
        args.skip_load = generate.facts_loaded(conninfo) >= preset.facts
    if not args.skip_load:
        loaded = generate.load(conninfo, preset)
        print(
            f"loaded {loaded['facts']:,} facts, {loaded['events']:,} events in "
            f"{loaded['seconds']:.0f} s"
        )
    ctx = Context(conninfo=conninfo, preset=preset, n=args.n, load_seconds=args.load_seconds)
    rng = random.Random(7)
    normal = preset.travellers - preset.heavy
    ctx.subjects = [generate.normal_id(rng.randrange(normal)) for _ in range(2000)]
    started = time.perf_counter()
    only = set(args.only.split(","))
    rows = asyncio.run(run_async(ctx, only))
    # The sweep last: it erases every fact.
    for name, scenario in (
        ("5", scenario_pages),
        ("6", scenario_extraction),
        ("filter", scenario_filter),
        ("4", scenario_sweep),
    ):
        if name in only:
            try:
                scenario(ctx, rows)
            except Exception as exc:  # noqa: BLE001 - report, and still print the table
                print(f"scenario {name} failed: {type(exc).__name__}: {exc}")
    print_table(
        rows,
        f"preset {args.preset}: {preset.travellers:,} travellers, "
        f"{preset.facts:,} facts; {os.cpu_count()} cores; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"scenarios took {time.perf_counter() - started:.0f} s",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
