"""Where the store's delete with erasure spends its time (issue 42), in three parts:

1. Wall clock, cases taking turns call by call, each deleting a fact made for it (with its
   created event, as scenario 7's deletes): `DjangoMemoryStore.delete_fact` (one call of its
   server-side function), and without that function; the same lock and erasing statement sent
   by hand on a bare psycopg connection (the store's round trip without
   its Python); the same without each registered eraser in turn, and without any; one bare
   `DELETE` of the row (the floor, what LangGraph's `adelete` does).
2. Python time per step of `services.fact_delete_async`, without I/O.
3. The server's side of each statement (sent without the function) under `auto_explain`
   (ANALYZE, BUFFERS, WAL, JSON, sent to the client as LOG notices): time, buffers and WAL of
   the lock and of each part of the erasing statement (`gone`, `redacted`, `recorded`, each
   eraser), median over the deletes.

4. The erasing statement's execution alone (EXPLAIN ANALYZE EXECUTE of its generic plan).
5. The synchronous service, `services.fact_delete` on Django's connection (the portal's "Delete
   this" and staff's delete): `DATABASE_PREPARED_WRITES` on (the erasing statement prepared,
   its generic plan) and off (planned every call, as before), call by call in turns.

    SECRET_KEY=dev DATABASE_URL=postgres://postgres@127.0.0.1:5432/ma_del_peers \
        .venv/bin/python bench/delete_profile.py [--n 300] [--rich] [--service-only]

`--service-only`: part 5 alone.

`--rich`: each fact deleted also has use receipts in two months, a stored idempotent reply
and a waiting receipt on a job (the erasers then have rows to change). The database is one
`bench/run.py` loaded (it takes its first 200 travellers). It writes facts and deletes them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")

import django  # noqa: E402

django.setup()

import psycopg  # noqa: E402
from asgiref.sync import sync_to_async  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

from bench.harness import (  # noqa: E402
    make_store,
    print_cpu_table,
    profile_subjects,
    turns_with_cpu,
)
from memoryadmin import db  # noqa: E402
from memoryadmin.facts import erasure, services  # noqa: E402
from memoryadmin.facts.actors import Actor  # noqa: E402
from memoryadmin.facts.models import EventAction  # noqa: E402
from memoryadmin.facts.sql import SQL_ERASE_FACTS, SQL_LOCK_SUBJECT_NAMED  # noqa: E402
from memoryadmin.facts.validation import (  # noqa: E402
    clean_reason,
    clean_subject_id,
    normalize_key,
)
from memoryadmin_client.types import MemoryFact  # noqa: E402

# The floor: what LangGraph's adelete sends (one DELETE by primary key, autocommit).
SQL_BARE_DELETE = "DELETE FROM memory_fact WHERE subject_id = %s AND key = %s"

ACTOR = Actor.agent("bench")
RUN = format(int(time.time()) % 1_000_000, "x")  # in every key made: reruns never collide


def _conninfo() -> dict[str, Any]:
    from memoryadmin.db.replicas import conninfo  # the bench may read the db layer's insides

    return {**conninfo("default"), "options": "-c TimeZone=UTC"}


# --- the facts to delete -------------------------------------------------------------------------


async def _make(store: Any, subjects: list[str], tag: str, count: int, rich: bool) -> list:
    made = []
    for j in range(count):
        subject, key = subjects[j % len(subjects)], f"bench_del_{RUN}{tag}_{j}"
        await store.upsert_facts(subject, [MemoryFact(key=key, value=f"Zq8 {tag} {j}")])
        made.append((subject, key))
    if rich:
        await sync_to_async(_enrich)(made)
    return made


def _enrich(made: list[tuple[str, str]]) -> None:
    """Receipts in this month and the last, a stored reply naming the fact, a job with waiting
    receipts: what a fact the agent used leaves behind."""
    from memoryadmin.api.models import IdempotencyRecord
    from memoryadmin.extraction.services import job_create_or_get
    from memoryadmin.usage.models import MemoryUse
    from memoryadmin.usage.services import TurnUse, uses_record

    now = timezone.now()
    token = _token()
    for n, (subject, key) in enumerate(made):
        uses_record(
            subject_id=subject,
            uses=[TurnUse(session_id="s", turn_id=f"t-{key}", injected=[key], recalled=[key])],
        )
        IdempotencyRecord.objects.create(
            token=token,
            key=f"idem-{key}",
            subject_id=subject,
            method="PUT",
            path=f"/api/v1/subjects/{subject}/facts/{key}",
            request_hash="0" * 64,
            status_code=200,
            response_body={"key": key, "value": f"Zq8 {n}"},
        )
        job_create_or_get(
            subject_id=subject,
            session_tag="0123456789ab",
            turn_id=f"w-{key}",
            messages=[],
            skip_reason="bench",
            used={"injected": [key], "recalled": []},
        )
    # half the receipts a month back: the eraser then has two months to find them in
    old = now.replace(day=1) - timezone.timedelta(days=3)
    ids = list(
        MemoryUse.objects.filter(turn_id__startswith="t-bench_del_")
        .order_by("id")
        .values_list("id", flat=True)[::2]
    )
    with connection.cursor() as cursor:  # moves the rows into last month's partition
        cursor.execute("UPDATE memory_use SET used_at = %s WHERE id = ANY(%s)", [old, ids])


def _token() -> Any:
    from memoryadmin.api.models import ServiceToken
    from memoryadmin.api.tokens import token_issue

    token = ServiceToken.objects.filter(name="bench delete_profile").first()
    if token is None:
        token, _ = token_issue(name="bench delete_profile", scopes=["memory:write"])
    return token


# --- part 1: wall clock --------------------------------------------------------------------------


def _statement_without(skip: str | None) -> str:
    """The erasing statement with every eraser that applies to facts, but `skip` (a registered
    name; "*" for none at all)."""
    parts = tuple(
        r.sql
        for name, r in erasure._ERASERS.items()
        if r.on_facts and r.sql and skip != "*" and name != skip
    )
    return erasure.erasing_statement(SQL_ERASE_FACTS, parts)


async def _by_hand(conn: Any, statement: str, subject: str, key: str) -> None:
    """The store's one round trip without its function (`db.locked_write`'s pipeline), the
    service's and the store's Python aside: the parameters made, then the lock and the erasing
    statement, one implicit transaction."""
    params = erasure._params_erase_facts(
        [(subject, key, ACTOR)], action=EventAction.DELETED, reason="", now=timezone.now()
    )
    params["subject"] = subject
    write = db.LockedWrite(
        prefix="bench_by_hand",
        lock=SQL_LOCK_SUBJECT_NAMED,
        write=statement,
        params=(("subject", "text"),),
        returns=(("subject_id", "varchar"), ("key", "varchar")),
    )
    enabled = settings.DATABASE_LOCKED_FUNCTIONS
    settings.DATABASE_LOCKED_FUNCTIONS = False  # its statements, pipelined
    try:
        assert await db.locked_write(conn, write, params), key
    finally:
        settings.DATABASE_LOCKED_FUNCTIONS = enabled


async def _wall_clock(subjects: list[str], n: int, rich: bool) -> None:
    store = make_store(native=True)
    names = [name for name, r in erasure._ERASERS.items() if r.on_facts and r.sql]
    cases: dict[str, Callable[[str, str], Awaitable[Any]]] = {}
    bare = await psycopg.AsyncConnection.connect(**_conninfo(), autocommit=True)
    hand = await psycopg.AsyncConnection.connect(**_conninfo(), autocommit=True)

    async def store_delete(subject: str, key: str) -> None:
        assert await store.delete_fact(subject, key), key

    async def bare_delete(subject: str, key: str) -> None:
        cursor = await bare.execute(SQL_BARE_DELETE, [subject, key])
        assert cursor.rowcount == 1, key

    def by_hand(skip: str | None) -> Callable[[str, str], Awaitable[None]]:
        statement = _statement_without(skip)

        async def call(subject: str, key: str) -> None:
            await _by_hand(hand, statement, subject, key)

        return call

    def store_delete_without(*, plan_in_lock: bool) -> Callable[[str, str], Awaitable[None]]:
        async def call(subject: str, key: str) -> None:
            settings.DATABASE_LOCKED_FUNCTIONS = False
            settings.DATABASE_PLAN_IN_LOCK = plan_in_lock
            try:
                assert await store.delete_fact(subject, key), key
            finally:
                settings.DATABASE_LOCKED_FUNCTIONS = functions
                settings.DATABASE_PLAN_IN_LOCK = in_lock

        return call

    in_lock = settings.DATABASE_PLAN_IN_LOCK
    functions = settings.DATABASE_LOCKED_FUNCTIONS
    cases["DjangoMemoryStore.delete_fact"] = store_delete
    cases["  ... without its function (lock and erasing statement pipelined)"] = (
        store_delete_without(plan_in_lock=True)
    )
    cases["  ... and DATABASE_PLAN_IN_LOCK off (SET and RESET around it)"] = store_delete_without(
        plan_in_lock=False
    )
    cases["lock + erasing statement by hand (all erasers)"] = by_hand(None)
    for name in names:
        cases[f"  ... without {name}"] = by_hand(name)
    cases["  ... without any eraser"] = by_hand("*")
    cases["one bare DELETE of the row (the floor)"] = bare_delete
    warm = max(5, n // 20)
    facts = {
        name: iter(await _make(store, subjects, f"c{c}", n + warm, rich))
        for c, name in enumerate(cases)
    }
    samples, cpu = await turns_with_cpu(cases, facts, n, warm)
    await bare.close()
    await hand.close()
    print(f"\n## 1. Wall clock, {n} calls a case taking turns (ms)\n")
    print_cpu_table(samples, cpu, n, "one bare DELETE of the row (the floor)", "x floor")


# --- part 2: Python per step ---------------------------------------------------------------------


def _per_call_us(fn: Callable[[], Any], n: int = 20000) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


async def _python_steps(subjects: list[str]) -> None:
    subject, key = subjects[0], "bench_del_python"
    rows = [(subject, key, ACTOR)]
    in_sql, _ = erasure._split(on_facts=True)
    now = timezone.now()
    steps = {
        "clean_subject_id + normalize_key": lambda: (
            clean_subject_id(subject),
            normalize_key(key),
        ),
        "erasure._split (the erasers that apply)": lambda: erasure._split(on_facts=True),
        "history_hashes (HMAC)": lambda: erasure.history_hashes(subject, key),
        "parameters (hashes + two JSON documents)": lambda: erasure._params_erase_facts(
            rows, action=EventAction.DELETED, reason="", now=now
        ),
        "the composed statement (cached)": lambda: erasure._with_erasers(SQL_ERASE_FACTS, in_sql),
        "clean_reason": lambda: clean_reason("deleted by the agent"),
        "timezone.now()": timezone.now,
    }
    print("\n## 2. Python per step, no I/O (us a call)\n")
    print("| step | us |")
    print("|---|---|")
    for name, fn in steps.items():
        print(f"| {name} | {_per_call_us(fn):.1f} |")

    async def checkout() -> None:
        async with db.store_connection():
            pass

    await checkout()
    start = time.perf_counter()
    for _ in range(2000):
        await checkout()
    print(
        f"| pool checkout and return (async) | {(time.perf_counter() - start) / 2000 * 1e6:.1f} |"
    )


# --- part 3: the server, under auto_explain ------------------------------------------------------


def _walk(node: dict[str, Any], found: dict[str, dict[str, float]], label: str) -> None:
    """Each CTE's top node (its `Subplan Name`), with its own subtree's counters."""
    name = node.get("Subplan Name", "")
    if name.startswith("CTE "):
        label = name[4:]
        found[label] = {
            "ms": node.get("Actual Total Time", 0.0),
            "hit": node.get("Shared Hit Blocks", 0),
            "read": node.get("Shared Read Blocks", 0),
            "dirtied": node.get("Shared Dirtied Blocks", 0),
            "wal_records": node.get("WAL Records", 0),
            "wal_bytes": node.get("WAL Bytes", 0),
            "wal_fpi": node.get("WAL FPI", 0),
        }
    for child in node.get("Plans", []):
        _walk(child, found, label)


async def _server(subjects: list[str], n: int, rich: bool) -> None:
    store = make_store(native=True)
    made = await _make(store, subjects, "ae", n + 10, rich)
    conn = await psycopg.AsyncConnection.connect(
        **_conninfo(), autocommit=True, prepare_threshold=5
    )
    plans: list[dict[str, Any]] = []

    def notice(diag: Any) -> None:
        text = diag.message_primary or ""
        if "{" in text:
            plans.append(json.loads(text[text.index("{") :]))

    conn.add_notice_handler(notice)
    for setting in (
        "LOAD 'auto_explain'",
        "SET auto_explain.log_min_duration = 0",
        "SET auto_explain.log_analyze = on",
        "SET auto_explain.log_buffers = on",
        "SET auto_explain.log_wal = on",
        "SET auto_explain.log_timing = on",
        "SET auto_explain.log_format = json",
        "SET client_min_messages = log",
    ):
        await conn.execute(setting)
    per_statement: dict[str, list[dict[str, float]]] = {}
    functions = settings.DATABASE_LOCKED_FUNCTIONS
    settings.DATABASE_LOCKED_FUNCTIONS = False  # the erasing statement's parts, not a call
    for i, (subject, key) in enumerate(made):
        plans.clear()
        start = time.perf_counter()
        assert await services.fact_delete_async(
            conn=conn, subject_id=subject, key=key, actor=ACTOR, reason=""
        )
        wall = (time.perf_counter() - start) * 1000
        if i < 10:  # warm-up: the statements prepared, their generic plans cached
            continue
        per_statement.setdefault("the call under auto_explain (wall)", []).append({"ms": wall})
        for plan in plans:
            text = plan.get("Query Text", "")
            top = plan["Plan"]
            total = {
                "ms": top.get("Actual Total Time", 0.0),
                "hit": top.get("Shared Hit Blocks", 0),
                "read": top.get("Shared Read Blocks", 0),
                "dirtied": top.get("Shared Dirtied Blocks", 0),
                "wal_records": top.get("WAL Records", 0),
                "wal_bytes": top.get("WAL Bytes", 0),
                "wal_fpi": top.get("WAL FPI", 0),
            }
            if "FOR UPDATE" in text and "DELETE" not in text:
                per_statement.setdefault("lock (SELECT ... FOR UPDATE)", []).append(total)
                continue
            parts: dict[str, dict[str, float]] = {}
            _walk(top, parts, "")
            for name, counters in parts.items():
                per_statement.setdefault(f"  part {_part_name(name)}", []).append(counters)
    settings.DATABASE_LOCKED_FUNCTIONS = functions
    await conn.close()
    print(f"\n## 3. The server under auto_explain, median of {n} deletes\n")
    print("| statement / part | ms | hit | read | dirtied | WAL rec | bytes | FPI |")
    print("|---|---|---|---|---|---|---|---|")
    for name, rows in per_statement.items():

        def med(field: str, rows: list[dict[str, float]] = rows) -> float:
            return statistics.median(row.get(field, 0.0) for row in rows)

        print(
            f"| {name} | {med('ms'):.3f} | {med('hit'):.0f} | "
            f"{med('read'):.0f} | {med('dirtied'):.0f} | {med('wal_records'):.0f} | "
            f"{med('wal_bytes'):.0f} | {med('wal_fpi'):.0f} |"
        )


_PARAM_ORDER = ("facts", "matches", "action", "reason", "now")


async def _execution(subjects: list[str], n: int) -> None:
    """The whole erasing statement's server time, executor start and end included (which the
    parts above leave out: the locks of every partition of a generic plan, opening each result
    relation and its indexes, the triggers): EXPLAIN (ANALYZE, SUMMARY) EXECUTE of its generic
    plan, in a transaction rolled back, so the same facts serve every round."""
    async with await psycopg.AsyncConnection.connect(**_conninfo()) as conn:
        facts = await (
            await conn.execute(
                "SELECT subject_id, key FROM memory_fact WHERE subject_id = ANY(%s) LIMIT %s",
                [subjects, n],
            )
        ).fetchall()
        await conn.rollback()
        print(f"\n## 4. The erasing statement's execution, generic plan, median of {len(facts)}\n")
        print("| erasers | execution ms |")
        print("|---|---|")
        took: dict[str, list[float]] = {}
        for label, skip in (("all", None), ("none", "*")):
            statement = _statement_without(skip)
            for i, name in enumerate(_PARAM_ORDER):
                statement = statement.replace(f"%({name})s", f"${i + 1}")
            await conn.execute(
                f"PREPARE erase_{label} (text, text, text, text, timestamptz) AS {statement}"
            )
            took[label] = []
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        await conn.commit()
        for subject, key in facts * 2:  # the two statements in turns, each fact twice
            for label in took:
                params = erasure._params_erase_facts(
                    [(subject, key, ACTOR)],
                    action=EventAction.DELETED,
                    reason="",
                    now=timezone.now(),
                )
                cursor = psycopg.AsyncClientCursor(conn)
                await cursor.execute(
                    f"EXPLAIN (ANALYZE, SUMMARY) EXECUTE erase_{label} (%s, %s, %s, %s, %s)",
                    [params[name] for name in _PARAM_ORDER],
                )
                text = "\n".join(row[0] for row in await cursor.fetchall())
                await conn.rollback()
                took[label].append(float(text.rsplit("Execution Time: ", 1)[1].split(" ")[0]))
        for label, times in took.items():
            print(f"| {label} | {statistics.median(times[len(facts) :]):.3f} |")


# --- part 5: the synchronous service on Django's connection -------------------------------------


def _service_sync(subjects: list[str], n: int) -> None:
    """`services.fact_delete` (atomic, the traveller's lock, the erasing statement), each call
    deleting a fact made for it (with its created event), `DATABASE_PREPARED_WRITES` on and off
    taking turns call by call on the one Django connection."""
    from memoryadmin.facts.services import FactDraft

    cases = {
        "services.fact_delete, DATABASE_PREPARED_WRITES on (prepared, generic plan)": True,
        "services.fact_delete, DATABASE_PREPARED_WRITES off (planned every call)": False,
    }
    warm = max(5, n // 20)
    facts = {}
    for c, name in enumerate(cases):
        made = []
        for j in range(n + warm):
            subject, key = subjects[j % len(subjects)], f"bench_del_{RUN}s{c}_{j}"
            services.fact_upsert(
                subject_id=subject, actor=ACTOR, facts=[FactDraft(key, f"Zq8 s{c} {j}")]
            )
            made.append((subject, key))
        facts[name] = iter(made)
    default = settings.DATABASE_PREPARED_WRITES

    def call(name: str) -> None:
        subject, key = next(facts[name])
        settings.DATABASE_PREPARED_WRITES = cases[name]
        try:
            assert services.fact_delete(subject_id=subject, key=key, actor=ACTOR), key
        finally:
            settings.DATABASE_PREPARED_WRITES = default

    order = list(cases)
    for _ in range(warm):
        for name in order:
            call(name)
    samples: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, float] = dict.fromkeys(cases, 0.0)
    for _ in range(n):
        random.shuffle(order)
        for name in order:
            start, start_cpu = time.perf_counter(), time.process_time()
            call(name)
            samples[name].append(time.perf_counter() - start)
            cpu[name] += time.process_time() - start_cpu
    print(f"\n## 5. The synchronous service, {n} calls a case taking turns (ms)\n")
    print("| case | p50 | p99 | client CPU |")
    print("|---|---|---|---|")
    for name, got in samples.items():
        ordered = sorted(got)
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        print(
            f"| {name} | {statistics.median(got) * 1000:.3f} | {p99 * 1000:.3f} "
            f"| {cpu[name] / n * 1000:.3f} |"
        )


def _part_name(cte: str) -> str:
    """`eraser_2` -> its registered name."""
    if cte.startswith("eraser_"):
        names = [name for name, r in erasure._ERASERS.items() if r.on_facts and r.sql]
        index = int(cte.split("_")[1])
        if index < len(names):
            return f"{cte} ({names[index]})"
    return cte


async def _main(subjects: list[str], n: int, rich: bool) -> None:
    print(
        f"# delete_profile: n={n}, rich={rich}, pooler={bool(settings.DATABASE_POOLER)}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.1f}"
    )
    await _python_steps(subjects)
    await _wall_clock(subjects, n, rich)
    await _server(subjects, n, rich)
    await _execution(subjects, min(n, 100))
    print(f"\nload {os.getloadavg()[0]:.1f}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--rich", action="store_true")
    parser.add_argument("--service-only", action="store_true", help="part 5 alone")
    args = parser.parse_args()
    subjects = profile_subjects()
    if not args.service_only:
        asyncio.run(_main(subjects, args.n, args.rich))
    else:
        print(
            f"# delete_profile --service-only: n={args.n}, "
            f"pooler={bool(settings.DATABASE_POOLER)}, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
            f"load {os.getloadavg()[0]:.1f}"
        )
    _service_sync(subjects, args.n)
    print(f"\nload {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
