"""Scenario 8, use receipts (issue 21): recording what the agent had must not slow the turn.

- `saved_memory_prompt` with `turn_id` (receipts noted, sent in the background) against the
  same call without, in-process and over HTTP (gunicorn), p50 in the same run: target <= 1.1x.
- `POST .../usage` with 1,000 turns of 20 facts: receipts written per second (target >= 20,000),
  against one raw multi-row INSERT of the same rows as the baseline.
- `POST .../usage` naming each fact's version (issue 33) against the same receipts by key alone,
  alternated, median of 7 in the same run: target <= 1.05x.
- `POST .../turns` with a `used` member against the same turn without, at least 200 calls
  each (the receipts ride on the job's row and are recorded off the request): target <= 1.1x.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid

from bench.harness import HTTP_PORT, Context, Row, gunicorn_server, make_store, take_turns


def _issue_token():
    from memoryadmin.api.tokens import token_issue

    return token_issue(name="bench-usage", scopes=["memory:read", "memory:write", "turns:write"])


async def scenario_usage(ctx: Context, rows: list[Row]) -> None:
    from memoryadmin_client import flush_uses, saved_memory_prompt
    from memoryadmin_client.http import HttpMemoryStore

    subjects = ctx.subjects
    store = make_store(native=True)
    got = await take_turns(
        {
            "without": lambda i: saved_memory_prompt(store, subjects[i % len(subjects)]),
            "with": lambda i: saved_memory_prompt(
                store, subjects[i % len(subjects)], session_id="bench", turn_id=f"in-{i}"
            ),
        },
        ctx.n,
    )
    await flush_uses(store)
    base = Row("8 use receipts", "saved_memory_prompt, in-process", got["without"])
    rows += [
        base,
        Row(
            "8 use receipts",
            "  ... recording on",
            got["with"],
            baseline=base,
            target="p50 <= 1.1x",
            limit=1.1,
        ),
    ]

    _, secret = await asyncio.to_thread(_issue_token)
    with gunicorn_server():
        url = f"http://127.0.0.1:{HTTP_PORT}"
        http = HttpMemoryStore(url, secret, timeout=30)
        try:
            for _ in range(100):
                try:
                    await http.memory_enabled()
                    break
                except Exception:  # noqa: BLE001 - not up yet
                    await asyncio.sleep(0.2)
            got = await take_turns(
                {
                    "without": lambda i: saved_memory_prompt(http, subjects[i % len(subjects)]),
                    "with": lambda i: saved_memory_prompt(
                        http, subjects[i % len(subjects)], session_id="bench", turn_id=f"h-{i}"
                    ),
                },
                ctx.n,
            )
            await flush_uses(http)
            base = Row("8 use receipts", "saved_memory_prompt, HTTP", got["without"])
            rows += [
                base,
                Row(
                    "8 use receipts",
                    "  ... recording on",
                    got["with"],
                    baseline=base,
                    target="p50 <= 1.1x",
                    limit=1.1,
                ),
            ]
            await _throughput(ctx, http, rows)
            await _turns(ctx, http, rows)
        finally:
            await http.aclose()


async def _throughput(ctx: Context, http, rows: list[Row]) -> None:
    """1,000 turns x 20 facts of one traveller in one POST (written with COPY), against one raw
    INSERT of as many rows (the floor of any writer)."""
    subject = ctx.subjects[0]
    keys = [
        r[0]
        for r in await (
            await ctx.raw.execute("SELECT key FROM memory_fact WHERE subject_id = %s", [subject])
        ).fetchall()
    ]
    keys = (keys * 20)[:20] if keys else ["none"]
    turns = [
        {
            "session_id": f"s{n % 50}",
            "turn_id": f"bulk-{n}",
            "injected": keys[:15],
            "recalled": keys[15:],
        }
        for n in range(1000)
    ]
    uses = sum(len(set(turn["injected"])) + len(set(turn["recalled"])) for turn in turns)
    samples, raw_samples = [], []
    for _ in range(5):
        start = time.perf_counter()
        await http.record_uses(subject, turns)
        samples.append(time.perf_counter() - start)
        start = time.perf_counter()
        await ctx.raw.execute(
            "INSERT INTO memory_use (subject_id, key_hash, fact_id, session_tag, turn_id, how,"
            " used_at) SELECT %s, '#x', 0, 's', 'raw', 'injected', now()"
            " FROM generate_series(1, %s)",
            [subject, uses],
        )
        raw_samples.append(time.perf_counter() - start)
    await ctx.raw.execute("DELETE FROM memory_use WHERE turn_id = 'raw'")
    await _versions(subject, http, turns, uses, rows)
    base = Row(
        "8 use receipts",
        f"raw INSERT of {uses:,} rows",
        raw_samples,
        throughput=uses / sorted(raw_samples)[2],
    )
    rows += [
        base,
        Row(
            "8 use receipts",
            f"POST .../usage, {uses:,} receipts",
            samples,
            throughput=uses / sorted(samples)[2],
            baseline=base,
            target=f">= 20,000/s: {uses / sorted(samples)[2]:,.0f}/s",
        ),
    ]


async def _versions(subject: str, http, turns: list[dict], uses: int, rows: list[Row]) -> None:
    """The same receipts naming the version the host read ({"key", "version"}) against keys
    alone (the receipt then takes the current version), alternated so drift hits both."""
    read = {f.key: f.version for f in await http.get_facts(subject)}
    versioned = [
        {
            **turn,
            "injected": [{"key": k, "version": read.get(k) or 1} for k in turn["injected"]],
            "recalled": [{"key": k, "version": read.get(k) or 1} for k in turn["recalled"]],
        }
        for turn in turns
    ]
    plain, named = [], []
    for _ in range(7):
        for body, samples in ((turns, plain), (versioned, named)):
            start = time.perf_counter()
            await http.record_uses(subject, body)
            samples.append(time.perf_counter() - start)
    # The recording itself (the service the view calls, in this process, on the same turns):
    # what the issue's 1.05x is about. The round trip above also carries a body twice the size
    # (each item an object), whose JSON encoding, sending and parsing are not the recording.
    recorded_plain, recorded_named = await asyncio.to_thread(
        _record_in_process, subject, turns, versioned
    )
    base_in = Row("8 use receipts", f"uses_record by key, {uses:,}, in-process", recorded_plain)
    base = Row("8 use receipts", f"POST .../usage by key, {uses:,}", plain)
    rows += [
        base_in,
        Row(
            "8 use receipts",
            "  ... naming each version",
            recorded_named,
            baseline=base_in,
            target="p50 <= 1.05x",
            limit=1.05,
        ),
        base,
        Row(
            "8 use receipts",
            "  ... naming each version",
            named,
            baseline=base,
            target="(a body twice the size)",
        ),
    ]


def _record_in_process(
    subject: str, turns: list[dict], versioned: list[dict]
) -> tuple[list[float], list[float]]:
    """`uses_record` on the same turns, by key and naming versions, alternated, 31 each."""
    from django.db import connection

    from memoryadmin.api.usage import turn_uses_from
    from memoryadmin.usage.services import uses_record

    plain, named = [], []
    try:
        for _ in range(31):
            for body, samples in ((turns, plain), (versioned, named)):
                uses = turn_uses_from({"turns": body})
                start = time.perf_counter()
                uses_record(subject_id=subject, uses=uses)
                samples.append(time.perf_counter() - start)
    finally:
        connection.close()  # this thread's own connection
    return plain, named


async def _turns(ctx: Context, http, rows: list[Row]) -> None:
    subjects = ctx.subjects
    message = [{"role": "user", "text": "I always want an aisle seat, please."}]
    run = uuid.uuid4().hex[:8]  # new turns each run: a replay (200) is another, cheaper path

    async def post(i: int, used: bool) -> object:
        body = {
            "session_id": "bench-turns",
            "turn_id": f"{run}-{'u' if used else 'p'}-{i}",
            "messages": message,
        }
        if used:
            body["used"] = {
                "injected": ["seat_preference", "meal_preference"],
                "recalled": ["home_airport"],
            }
        return await http.request(
            "POST",
            f"/api/v1/subjects/{subjects[i % len(subjects)]}/turns",
            json=json.loads(json.dumps(body)),
            idempotency_key=None,
        )

    got = await take_turns(
        {"without": lambda i: post(i, False), "with": lambda i: post(i, True)}, max(200, ctx.n)
    )
    base = Row("8 use receipts", "POST .../turns", got["without"])
    rows += [
        base,
        Row(
            "8 use receipts",
            "  ... with `used`",
            got["with"],
            baseline=base,
            target="p50 <= 1.1x",
            limit=1.1,
        ),
    ]
