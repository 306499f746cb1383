"""The whole API under gunicorn (2 workers) and a Celery worker, all through Debian's real
pgbouncer in transaction mode (DATABASE_POOLER=transaction) in front of the test database:
mixed load from several threads, not one error."""

from __future__ import annotations

import os
import threading
from collections import Counter

import httpx
import pytest
import redis
from django.db import connection

from memoryadmin.api.tokens import token_issue
from tests.client.servers import free_port
from tests.extraction.worker import Worker, wait_for
from tests.support.gunicorn import Gunicorn
from tests.support.pgbouncer import PgBouncer
from tests.support.replication import run_store
from tests.support.writes import post_aisle_turn

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

THREADS, ROUNDS = 6, 12
FINISHED = {"succeeded", "skipped", "failed"}


def _load(base: str, secret: str, number: int, outcomes: Counter, jobs: list[str]) -> None:
    auth = {"Authorization": f"Bearer {secret}"}
    subject = f"FF-POOL-{number}"
    facts = f"/api/v1/subjects/{subject}/facts"
    with httpx.Client(base_url=base, headers=auth, timeout=30) as agent:
        for n in range(ROUNDS):
            answers = [
                agent.put(f"{facts}/seat", json={"value": f"aisle {n}", "category": "preference"}),
                agent.put(facts, json={"facts": [{"key": f"k{n}", "value": f"v {n}"}]}),
                agent.get(facts),
                agent.get(f"{facts}/seat"),
                agent.get(f"/api/v1/subjects/{subject}/tier-one"),
                agent.get(f"{facts}/search", params={"q": "aisle"}),
                agent.delete(f"{facts}/k{n}"),
            ]
            if n % 4 == 0:
                turn = post_aisle_turn(
                    agent, subject, session_id=f"pool-{number}", turn_id=f"turn-{n}"
                )
                answers.append(turn)
                if turn.status_code == 202:
                    jobs.append(turn.json()["job_id"])
            for answer in answers:
                outcomes[answer.status_code // 100 * 100] += 1
                if answer.status_code >= 400:
                    outcomes[
                        f"{answer.request.method} {answer.status_code} {answer.text[:200]}"
                    ] += 1


def test_the_api_and_a_worker_through_pgbouncer_in_transaction_mode():
    conf = connection.settings_dict
    bouncer = PgBouncer(
        server_host=conf["HOST"] or "127.0.0.1", server_port=int(conf["PORT"] or 5432)
    )
    bouncer.start()
    _, secret = token_issue(
        name="pooled-host",
        scopes=["memory:read", "memory:write", "turns:write"],
        throttle_rate="100000/min",
    )
    broker = os.environ["TEST_BROKER_URL"]
    redis.Redis.from_url(broker).flushdb()
    env = {
        "DATABASE_URL": bouncer.url(conf["NAME"]),
        "DATABASE_POOLER": "transaction",
        "DB_CONN_MAX_AGE": "60",
        "CELERY_BROKER_URL": broker,
        "ANTHROPIC_API_KEY": "",
    }
    web = worker = None
    try:
        worker = Worker(broker_url=broker, env=env, name="pooled-worker").start()
        web = Gunicorn(port=free_port(), env=env, workers=2).start()
        outcomes: Counter = Counter()
        jobs: list[str] = []
        threads = [
            threading.Thread(target=_load, args=(web.url, secret, n, outcomes, jobs))
            for n in range(THREADS)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        errors = {k: v for k, v in outcomes.items() if isinstance(k, str)}
        assert not errors, (errors, web.output()[-3000:])
        assert outcomes[200] > THREADS * ROUNDS * 5
        # Every posted turn was taken by the worker, through the pooler too.
        auth = {"Authorization": f"Bearer {secret}"}
        with httpx.Client(base_url=web.url, headers=auth, timeout=30) as agent:
            for job in jobs:
                wait_for(
                    lambda job=job: agent.get(f"/api/v1/jobs/{job}").json()["status"] in FINISHED,
                    timeout=60,
                )
        # The in-process store's native connections, through the pooler too: past psycopg's
        # prepare threshold (5 runs of a statement), upserts, reads and deletes.
        steps = [["upsert", "FF-POOL-STORE", f"k{n}", f"v {n}"] for n in range(8)]
        steps += [["get", "FF-POOL-STORE"]] * 8 + [["delete", "FF-POOL-STORE", "k0"]] * 2
        done = run_store(env, steps)
        assert done[8] == {f"k{n}": f"v {n}" for n in range(8)}
        assert done[-2:] == [True, False]
        assert "prepared statement" not in bouncer.log()
        assert "ERROR" not in web.output() and "Traceback" not in web.output()
        assert "Traceback" not in worker.output(), worker.output()[-3000:]
    finally:
        if web is not None:
            web.stop()
        if worker is not None:
            worker.stop()
        bouncer.stop()
