"""Scenario 6, extraction: the pipeline per turn against the write it ends in, then turns per
second through a real Celery worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from bench import generate
from bench.harness import ROOT, Context, Row

EXTRACTED = [
    {
        "key": "seat_preference",
        "value": "Prefers a window seat on night flights",
        "category": "preference",
    },
    {
        "key": "bench_meal_note",
        "value": "Asks for the fruit platter instead of dessert",
        "category": "preference",
    },
    {
        "key": "bench_connection",
        "value": "Wants at least 90 minutes to connect",
        "category": "constraint",
    },
]
TURN = [
    {
        "role": "user",
        "text": "I always take the window on night flights, and please no tight "
        "connections, 90 minutes at least. Fruit instead of dessert.",
    },
    {"role": "assistant", "text": "Noted: window seat at night, 90-minute connections, fruit."},
]


def scenario_extraction(ctx: Context, rows: list[Row], workers: int = 2) -> None:
    """Per-turn pipeline time with the fake model answering at once (the real anthropic SDK over
    HTTP to memoryadmin/testing/fake_anthropic.py), against fact_upsert of the same 3 facts; then
    turns per second through a real Celery worker (2 processes) on Redis, against the same
    pipeline in one process."""
    from django.conf import settings
    from django.db import connection

    from memoryadmin.extraction import services as extraction_services
    from memoryadmin.extraction.models import FINISHED_STATUSES, ExtractionJob
    from memoryadmin.extraction.runtime import extract_turn
    from memoryadmin.facts import services
    from memoryadmin.facts.actors import Actor
    from memoryadmin.testing.fake_anthropic import FakeAnthropic, tool_use

    broker = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/12")
    subjects = ctx.subjects
    run_id = int(time.time())
    # Values new to this run (a tag of letters: digits could read as an account number), so
    # both sides write every run; with the values of an earlier run already stored, the write
    # was a no-op and extraction's dedup dropped every proposal.
    run_tag = "".join(chr(ord("a") + int(digit)) for digit in str(run_id)[-6:])
    extracted = [{**fact, "value": f"{fact['value']} ({run_tag})"} for fact in EXTRACTED]
    fake = FakeAnthropic().start()
    fake.fallback = tool_use(extracted)
    settings.ANTHROPIC_API_KEY = "bench-fake-key"
    settings.ANTHROPIC_BASE_URL = fake.base_url

    def new_job(index: int) -> int:
        job, _ = extraction_services.job_create_or_get(
            subject_id=subjects[(index * 7 + 3) % len(subjects)],
            session_tag=generate.tag(index),
            turn_id=f"bench-{run_id}-{index}",
            messages=TURN,
            created_by_label="bench",
            skip_reason=None,
        )
        return job.pk

    pipeline: list[float] = []
    write: list[float] = []
    n = max(30, ctx.n // 4)
    for index in range(n + 5):
        job_id = new_job(index)
        start = time.perf_counter()
        extract_turn(job_id)
        took = time.perf_counter() - start
        start = time.perf_counter()
        services.fact_upsert(
            subject_id=subjects[(index * 7 + 5) % len(subjects)],
            facts=[
                services.FactDraft(f["key"], f["value"] + f" {index}", f["category"])
                for f in extracted
            ],
            actor=Actor.extraction(),
            reason="bench",
            session_tag=generate.tag(index),
        )
        if index >= 5:  # warm-up
            pipeline.append(took)
            write.append(time.perf_counter() - start)
    base = Row("6 extraction", "fact_upsert of the same 3 facts", write)
    rows.append(base)
    rows.append(
        Row(
            "6 extraction",
            "pipeline per turn (fake model, at once)",
            pipeline,
            baseline=base,
            target="p50 <= 3x the write",
            limit=3.0,
        )
    )
    in_process = Row(
        "6 extraction",
        "turns/s, pipeline in one process",
        pipeline,
        throughput=len(pipeline) / sum(pipeline),
    )
    rows.append(in_process)

    # Through Celery: enqueue a batch, time until every job has finished.
    env = {
        **os.environ,
        "CELERY_BROKER_URL": broker,
        "ANTHROPIC_API_KEY": "bench-fake-key",
        "ANTHROPIC_BASE_URL": fake.base_url,
        "DEBUG": "false",
    }
    log = open(os.devnull, "wb")  # noqa: SIM115 - closed below
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "memoryadmin",
            "worker",
            f"--concurrency={workers}",
            "--loglevel=WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            f"--hostname=bench-{os.getpid()}@%h",
        ],
        cwd=str(ROOT),
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        from memoryadmin.celery import app as celery_app

        celery_app.conf.update(broker_url=broker, task_always_eager=False)
        celery_app._pool = None
        warm = [new_job(10_000 + i) for i in range(4)]  # the worker is up when these finish
        for job_id in warm:
            extraction_services.job_enqueue(job_id)
        _wait_jobs(ExtractionJob, FINISHED_STATUSES, warm, timeout=120)
        batch = [new_job(20_000 + i) for i in range(max(40, n))]
        start = time.perf_counter()
        for job_id in batch:
            extraction_services.job_enqueue(job_id)
        _wait_jobs(ExtractionJob, FINISHED_STATUSES, batch, timeout=600)
        seconds = time.perf_counter() - start
        failed = ExtractionJob.objects.filter(pk__in=batch, status="failed").count()
        rows.append(
            Row(
                "6 extraction",
                f"turns/s, Celery worker ({workers} processes)",
                [seconds / len(batch)],
                throughput=len(batch) / seconds,
                baseline=in_process,
                target=f"({failed} failed)" if failed else "",
            )
        )
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(30)
        log.close()
        fake.stop()
        connection.close()


def _wait_jobs(model, finished, ids: list[int], *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if model.objects.filter(pk__in=ids, status__in=list(finished)).count() == len(ids):
            return
        time.sleep(0.05)
    raise RuntimeError("extraction jobs did not finish in time")
