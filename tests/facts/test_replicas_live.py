"""Read replicas with read-your-writes, on a real primary and a real streaming standby
(tests/support/replication.py): gunicorn (the API, the portal) and the in-process store in
processes of their own, reading from the standby; replay paused on the standby so that what it
has not replayed is really not there."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from tests.client.servers import free_port
from tests.extraction.worker import ROOT
from tests.support.gunicorn import Gunicorn
from tests.support.replication import Cluster, Redis, app_env, run_script, run_store

pytestmark = pytest.mark.integration

SUBJECT = "FF-REPLICA-1"


def _env(cluster: Cluster, redis: Redis) -> dict[str, str]:
    # Plain http in the test: the portal's cookie may not be Secure-only.
    return app_env(cluster, redis.url, CACHE_RETRY_SECONDS="1", PORTAL_COOKIE_SECURE="false")


class Stack:
    def __init__(self, cluster: Cluster, redis: Redis, web: Gunicorn, token: str) -> None:
        self.cluster = cluster
        self.redis = redis
        self.web = web
        self.env = _env(cluster, redis)
        self.agent = httpx.Client(
            base_url=web.url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )

    def facts_url(self, subject: str) -> str:
        return f"/api/v1/subjects/{subject}/facts"

    def put(self, subject: str, key: str, value: str) -> None:
        answer = self.agent.put(
            f"{self.facts_url(subject)}/{key}", json={"value": value, "category": "preference"}
        )
        assert answer.status_code in (200, 201), answer.text

    def values(self, subject: str) -> dict[str, str]:
        answer = self.agent.get(self.facts_url(subject))
        assert answer.status_code == 200, (answer.text, self.web.output()[-3000:])
        body = answer.json()
        facts = body["facts"] if isinstance(body, dict) else body
        return {fact["key"]: fact["value"] for fact in facts}

    def settle(self) -> None:
        """The standby has replayed everything, and the app has looked at it since."""
        self.cluster.wait_replayed()
        time.sleep(0.5)


@pytest.fixture(scope="module")
def stack():
    cluster = Cluster().start()
    folder = Path(tempfile.mkdtemp(prefix="ma-replica-redis-"))
    redis = Redis(folder).start()
    redis.positions_started_long_ago()
    web = None
    try:
        env = _env(cluster, redis)
        made = subprocess.run(  # noqa: S603 - fixed argv
            [sys.executable, "manage.py", "create_service_token", "replica-test"]
            + ["--scope", "memory:read", "--scope", "memory:write", "--scope", "portal:issue"],
            cwd=ROOT,
            env={**os.environ, **env},
            check=True,
            capture_output=True,
            text=True,
        )
        token = made.stdout.strip().splitlines()[-1]
        web = Gunicorn(port=free_port(), env=env, workers=2).start()
        yield Stack(cluster, redis, web, token)
    finally:
        if web is not None:
            web.stop()
        redis.remove()
        cluster.stop()


@pytest.fixture
def paused(stack):
    """Replay paused on the standby for the test, resumed after it."""
    stack.settle()
    stack.cluster.pause_replay()
    try:
        yield stack
    finally:
        stack.cluster.resume_replay()
        stack.settle()


def test_reads_are_served_by_the_replica(stack):
    stack.put(SUBJECT, "seat", "aisle")
    stack.settle()
    stack.cluster.pause_replay()
    try:
        # Behind the app's back: no write of the app's, so no recorded position.
        stack.cluster.primary.sql(
            "UPDATE memory_fact SET value = 'window' WHERE subject_id = %s AND key = 'seat'",
            [SUBJECT],
        )
        assert stack.values(SUBJECT)["seat"] == "aisle"  # the standby's copy
        store = run_store(stack.env, [["get", SUBJECT]])
        assert store == [{"seat": "aisle"}]
    finally:
        stack.cluster.resume_replay()
    stack.settle()
    assert stack.values(SUBJECT)["seat"] == "window"
    health = httpx.get(f"{stack.web.url}/healthz", timeout=10).json()
    assert health["replicas"]["replica1"]["state"] == "ok", health


def test_read_your_writes_through_the_api(paused):
    paused.put("FF-RYW-API", "meal", "vegetarian")
    assert paused.values("FF-RYW-API") == {"meal": "vegetarian"}
    tier = paused.agent.get("/api/v1/subjects/FF-RYW-API/tier-one")
    assert "vegetarian" in tier.text
    one = paused.agent.get("/api/v1/subjects/FF-RYW-API/facts/meal")
    assert one.status_code == 200 and "vegetarian" in one.text
    # ...and from another process: the in-process store reads it too.
    assert run_store(paused.env, [["get", "FF-RYW-API"]]) == [{"meal": "vegetarian"}]


def test_read_your_writes_through_the_in_process_store(paused):
    run_store(paused.env, [["upsert", "FF-RYW-STORE", "seat", "exit row"]])
    # Another process (a second store) and the API both see the write at once.
    assert run_store(paused.env, [["get", "FF-RYW-STORE"]]) == [{"seat": "exit row"}]
    assert paused.values("FF-RYW-STORE") == {"seat": "exit row"}


def test_read_your_writes_through_the_portal(paused):
    subject = "FF-RYW-PORTAL"
    # The fact exists on the standby too, before replay is paused again.
    paused.cluster.resume_replay()
    paused.put(subject, "seat", "aisle")
    paused.settle()
    paused.cluster.pause_replay()
    link = paused.agent.post(f"/api/v1/subjects/{subject}/portal-links", json={})
    assert link.status_code == 201, link.text
    secret = link.json()["url"].rstrip("/").rsplit("/", 1)[-1]
    with httpx.Client(base_url=paused.web.url, timeout=30) as traveller:
        page = traveller.get(f"/portal/open/{secret}")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        signed_in = traveller.post(f"/portal/open/{secret}", data={"csrfmiddlewaretoken": csrf})
        assert signed_in.status_code == 302, signed_in.text[:300]
        form = traveller.get("/portal/facts/seat/change")
        assert form.status_code == 200, form.text[:300]
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        version = re.search(r'name="version" value="(\d+)"', form.text).group(1)
        changed = traveller.post(
            "/portal/facts/seat/change",
            data={"csrfmiddlewaretoken": csrf, "value": "window seat please", "version": version},
        )
        assert changed.status_code in (302, 303), changed.text[:500]
        home = traveller.get("/portal/")
        assert home.status_code == 200
        assert "window seat please" in home.text
    # The agent's next read sees the traveller's change too.
    assert paused.values(subject) == {"seat": "window seat please"}


def test_a_stopped_replica_sends_reads_to_the_primary(stack):
    stack.put("FF-REPLICA-DOWN", "seat", "aisle")
    stack.settle()
    stack.cluster.standby.stop()
    try:
        for _ in range(5):  # at once, before any look has seen it go: no error either
            assert stack.values("FF-REPLICA-DOWN") == {"seat": "aisle"}
        assert run_store(stack.env, [["get", "FF-REPLICA-DOWN"]]) == [{"seat": "aisle"}]
        stack.put("FF-REPLICA-DOWN", "seat", "window")
        assert stack.values("FF-REPLICA-DOWN") == {"seat": "window"}
        time.sleep(0.5)
        health = httpx.get(f"{stack.web.url}/healthz", timeout=10)
        assert health.status_code == 200
        assert health.json()["replicas"]["replica1"]["state"] == "down"
        assert health.json()["status"] == "degraded"
        # No replica to try: a read does not ask Redis for the traveller's position at all.
        before = _script_calls(stack.redis)
        assert run_selector(stack.env, "FF-REPLICA-DOWN") == {"seat": "window"}
        assert _script_calls(stack.redis) == before
    finally:
        stack.cluster.standby.start()
    stack.settle()


SELECTOR_SCRIPT = """
import json, sys
import django
django.setup()
from memoryadmin.facts import selectors
print(json.dumps({f.key: f.value for f in selectors.facts_for_agent(sys.argv[1])}))
"""


def run_selector(env: dict[str, str], subject: str) -> dict[str, str]:
    """`selectors.facts_for_agent` (the API's read, on a thread) in a process of its own."""
    return run_script(env, SELECTOR_SCRIPT, subject)


def test_a_replica_behind_the_traveller_is_not_read(paused):
    """Caught up with the traveller's last write, the replica answers; behind it, the primary
    does (the replica is not asked), on a thread (the API's read) and on an event loop (the
    store's)."""
    subject = "FF-BEHIND-1"
    env = paused.env
    paused.cluster.resume_replay()
    paused.put(subject, "seat", "aisle")
    paused.settle()
    paused.cluster.pause_replay()
    paused.cluster.primary.sql(  # behind the app's back: primary "window", standby "aisle"
        "UPDATE memory_fact SET value = 'window' WHERE subject_id = %s AND key = 'seat'",
        [subject],
    )
    assert run_selector(env, subject) == {"seat": "aisle"}  # caught up: the replica's rows
    assert run_store(env, [["get", subject]]) == [{"seat": "aisle"}]
    paused.put(subject, "drink", "coffee")  # now the replica is behind the traveller
    assert run_selector(env, subject) == {"seat": "window", "drink": "coffee"}  # the primary's
    assert run_store(env, [["get", subject]]) == [{"seat": "window", "drink": "coffee"}]
    assert paused.values(subject) == {"seat": "window", "drink": "coffee"}  # the API's workers


def _script_calls(redis: Redis) -> int:
    """How many Lua scripts the Redis server has run (the positions' reads and writes)."""
    import redis as redis_py

    client = redis_py.Redis.from_url(redis.url)
    try:
        stats = client.info("commandstats")
    finally:
        client.close()
    return sum(stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in ("evalsha", "eval"))


def test_with_redis_stopped_no_read_is_stale(paused):
    subject = "FF-RYW-REDIS"
    paused.put(subject, "seat", "aisle")  # its position is in Redis...
    paused.redis.stop()  # ...which now goes away
    try:
        assert paused.values(subject) == {"seat": "aisle"}
        assert run_store(paused.env, [["get", subject]]) == [{"seat": "aisle"}]
        # A write while Redis is down is read back too.
        paused.put(subject, "seat", "window")
        assert paused.values(subject) == {"seat": "window"}
        assert run_store(paused.env, [["get", subject]]) == [{"seat": "window"}]
    finally:
        paused.redis.start()


def test_after_a_redis_restart_no_read_is_stale(paused):
    """Redis keeps nothing on disk: a restart loses every position. Until the positions' map is
    older than the most a usable replica may be behind, reads go to the primary."""
    subject = "FF-RYW-RESTART"
    paused.cluster.resume_replay()
    paused.put(subject, "seat", "aisle")
    paused.settle()
    paused.cluster.pause_replay()
    paused.put(subject, "seat", "window")  # its position is in Redis, the standby has not it
    paused.redis.stop()
    paused.redis.start()  # empty: the position is gone
    time.sleep(1.5)  # past CACHE_RETRY_SECONDS: the workers use Redis again after their failure
    for _ in range(6):  # both workers, each past its first (failing) call on the old socket
        assert paused.values(subject) == {"seat": "window"}
        time.sleep(0.3)
    assert run_store(paused.env, [["get", subject]]) == [{"seat": "window"}]
