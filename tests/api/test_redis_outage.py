"""Redis down (issue 19): PostgreSQL is the system of record, so the agent API, the staff pages
and the portal go on serving. A redis-server of our own on a private port, really stopped (no
mock of our code or of Redis): the throttle fails open to a per-process limit with one warning
a minute, token lookups come from the database, a posted turn is kept `queued`, and /healthz
says `degraded`, naming the cache and the broker.

The fault run under load against `make serve` (bench/fault_test.py, 60 s by hand) runs here
once per case (the broker's Redis, the cache's, both), shortened to 18 s each."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.test import override_settings

from memoryadmin.api.throttling import throttle_leases_clear
from memoryadmin.db import redis as sharedcache
from memoryadmin.extraction.models import ExtractionJob
from memoryadmin.facts.models import MemoryFact
from tests.client.servers import free_port
from tests.extraction.worker import publishing_to, subprocess_database_url
from tests.staff.conftest import make_staff

from .conftest import facts_url, subject_url

ROOT = Path(__file__).resolve().parents[2]
REDIS_PORT = free_port()  # per process: each pytest-xdist worker has its own
DEAD_URL = f"redis://127.0.0.1:{REDIS_PORT}/0"


def _redis_cache(url: str) -> dict:
    return {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": "memoryadmin",
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }


@pytest.fixture
def redis_then_killed(tmp_path):
    """Our own redis-server: answers first, then is killed (SIGKILL), as in an outage."""
    server = subprocess.Popen(  # noqa: S603 - fixed argv
        [
            "redis-server",
            "--port",
            str(REDIS_PORT),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            ping = subprocess.run(
                ["redis-cli", "-p", str(REDIS_PORT), "ping"],  # noqa: S607
                capture_output=True,
                text=True,
            )
            if ping.stdout.strip() == "PONG":
                break
            time.sleep(0.05)
        sharedcache.fallback_reset()
        throttle_leases_clear()

        def kill() -> None:
            server.kill()
            server.wait(10)

        yield kill
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)
        sharedcache.fallback_reset()
        throttle_leases_clear()


@pytest.mark.django_db
def test_the_agent_api_serves_from_postgresql_while_redis_is_down(
    make_agent, redis_then_killed, caplog
):
    with (
        override_settings(
            CACHES=_redis_cache(DEAD_URL),
            CELERY_BROKER_URL=DEAD_URL,
            ANTHROPIC_API_KEY="test-key",
            API_THROTTLE_RATE="1000/min",
        ),
        publishing_to(DEAD_URL),
    ):
        from django.core.cache import caches

        caches["default"].set("probe", 1)  # Redis answers before the outage
        agent = make_agent("memory:read", "memory:write", "turns:write")
        assert agent.get(subject_url("FF-R1", "tier-one")).status_code == 200
        redis_then_killed()
        caplog.set_level(logging.WARNING, logger="memoryadmin.db.redis")

        put = agent.put(facts_url("FF-R1", "seat"), {"value": "Prefers aisle seats"}, format="json")
        assert put.status_code == 201, put.content
        for _ in range(30):
            assert agent.get(subject_url("FF-R1", "tier-one")).status_code == 200
        assert [f["value"] for f in agent.get(facts_url("FF-R1")).json()["facts"]] == [
            "Prefers aisle seats"
        ]
        turn = agent.post(
            subject_url("FF-R1", "turns"),
            {
                "session_id": "s-1",
                "turn_id": "t-1",
                "messages": [{"role": "user", "text": "I like aisle seats."}],
            },
            format="json",
        )
        assert turn.status_code == 202 and turn.json()["status"] == "queued"
        job = ExtractionJob.objects.get(subject_id="FF-R1", turn_id="t-1")
        assert job.status == "queued" and job.sent_at is None  # the reaper sends it later

    warnings = [r for r in caplog.records if r.name == "memoryadmin.db.redis"]
    assert len(warnings) == 1  # once a minute, not per request
    assert "Prefers aisle" not in caplog.text and "FF-R1" not in caplog.text
    assert MemoryFact.objects.filter(subject_id="FF-R1", key="seat").exists()


@pytest.mark.django_db
def test_the_throttle_still_limits_each_process_while_redis_is_down(make_agent, redis_then_killed):
    with override_settings(CACHES=_redis_cache(DEAD_URL)):
        agent = make_agent()
        agent.token.throttle_rate = "5/min"
        agent.token.save(update_fields=["throttle_rate"])
        redis_then_killed()
        codes = [agent.get(subject_url("FF-R2", "tier-one")).status_code for _ in range(8)]
    assert codes == [200] * 5 + [429] * 3


@pytest.mark.django_db
def test_healthz_says_degraded_and_names_the_cache_and_the_broker(client, redis_then_killed):
    with override_settings(
        CACHES=_redis_cache(DEAD_URL),
        CELERY_BROKER_URL=DEAD_URL,
        API_HEALTH_BROKER_TIMEOUT_SECONDS=1,
    ):
        assert client.get("/healthz").json()["status"] == "ok"
        redis_then_killed()
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "degraded",
        "database": "ok",
        "broker": "error",
        "cache": "error",
        "write_filter": "ok",
    }


@pytest.mark.django_db
def test_the_staff_pages_and_the_portal_keep_working(client, redis_then_killed, settings):
    from memoryadmin.portal.services import portal_link_issue
    from memoryadmin.staff.roles import EDITOR

    with override_settings(CACHES=_redis_cache(DEAD_URL), CELERY_BROKER_URL=DEAD_URL):
        redis_then_killed()
        client.force_login(make_staff("ed.outage", EDITOR))
        assert client.get("/staff/").status_code == 200
        assert client.get("/staff/travellers/").status_code == 200
        secret = portal_link_issue(subject_id="FF-R3", issued_by="test").secret
        traveller = type(client)()
        opened = traveller.post(f"/portal/open/{secret}")  # counts in the link throttle
        assert opened.status_code == 302
        assert traveller.get("/portal/").status_code == 200


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("case", ["broker", "cache", "both"])
def test_fault_run_redis_killed_under_load_against_make_serve(case):
    """bench/fault_test.py, the issue's three cases each on its own run: the broker's Redis alone,
    a separate CACHE_URL Redis alone, both at once, killed during mixed load against `make serve`
    (FAULT_TEST_SECONDS each, 18 by default; 60 by hand for bench/RESULTS.md). 0 5xx, /healthz
    degraded while it lasts, turns posted meanwhile, every turn processed once Redis is back, no
    lost update."""
    url = subprocess_database_url()
    done = subprocess.run(
        [
            sys.executable,
            "bench/fault_test.py",
            "--case",
            case,
            "--duration",
            os.environ.get("FAULT_TEST_SECONDS", "18"),
        ],
        cwd=ROOT,
        env={
            **os.environ,
            "DATABASE_URL": url,
            "FAULT_PORT": str(free_port()),
            "FAULT_REDIS_PORTS": f"{free_port()},{free_port()}",
        },
        capture_output=True,
        text=True,
        timeout=900,
    )
    report = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, report
    assert "FAIL" not in done.stdout, report
    label = {
        "broker": "the broker's Redis",
        "cache": "the cache's Redis",
        "both": "both Redis servers",
    }[case]
    assert f"kill {label}" in done.stdout and f"start {label} again" in done.stdout, report
    named = {"broker": "broker", "cache": "cache", "both": "broker and cache"}[case]
    for check in (
        "no 5xx",
        "no lost update",
        "no request failed at the connection",
        "every posted turn processed once Redis is back",
        "one model call per job",
        f"{case}: /healthz said degraded, naming {named}",
        f"{case}: turns posted while it was down",
    ):
        assert f"PASS  {check}" in done.stdout, report
