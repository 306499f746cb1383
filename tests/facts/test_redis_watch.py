"""This process's copy of the read-your-writes positions (`redis_watch`), against a
redis-server of the test's own (stopped, frozen and flushed here): a write by another process is
seen by the very next read, a reply that raced a write is not kept, and the copy is dropped when
Redis restarts, is flushed, or goes silent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import redis

from memoryadmin.db import positions, redis_watch, routing
from memoryadmin.db.redis import fallback_reset
from tests.extraction.worker import ROOT
from tests.support.replication import Redis

pytestmark = pytest.mark.integration

KEY = ("s:WATCHED-1",)
NAME = (positions.KEY_PREFIX + KEY[0],)

# Another host: writes the position it is given on each line of stdin, says "ok" once done.
WRITER = """
import sys, django
django.setup()
from memoryadmin.db import positions
print("ready", flush=True)
for line in sys.stdin:
    assert positions.store(("s:WATCHED-1",), int(line))
    print("ok", flush=True)
"""


@pytest.fixture
def server(settings):
    own = Redis(Path(tempfile.mkdtemp(prefix="ma-watch-redis-"))).start()
    own.positions_started_long_ago()
    settings.CACHE_URL = own.url
    settings.CACHE_RETRY_SECONDS = 0
    settings.DATABASE_REPLICA_POSITION_WATCH_SECONDS = 1.0
    positions.reset()
    fallback_reset()
    yield own
    positions.reset()
    fallback_reset()
    own.remove()


def _read() -> int | None:
    """A routed read's steps with the positions (`replicas.route_start`, `route_finish`): this
    process's copy, else Redis (tracked to the watch), the answer kept when the decision says."""
    known, ticket = positions.lookup(KEY)
    if known is not None:
        return known
    found = positions.needed(KEY, ticket)
    up_to_date = (routing.Replica("replica1", 0, usable=True),)
    if routing.decide(up_to_date, routing.Process(), routing.Written(found)).keep:
        positions.keep(ticket, KEY, found)
    return found


def _known() -> int | None:
    return redis_watch.lookup(NAME)[0]


def _learned() -> int | None:
    """Read the position twice: the first asks Redis and keeps the answer, the second must not."""
    first = _read()
    assert _read() == first
    return _known()


def test_the_second_read_of_a_traveller_asks_nothing(server):
    assert _known() is None
    assert _read() == 0
    assert _known() == 0
    assert positions.store(KEY, 7000)  # this process's own write: forgotten at once
    assert _known() is None
    assert _read() == 7000
    assert _known() == 7000


def test_another_processs_write_is_seen_by_the_very_next_read(server):
    writer = subprocess.Popen(  # noqa: S603 - fixed argv
        [sys.executable, "-c", WRITER],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "memoryadmin.settings"}
        | {"CACHE_URL": server.url},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout.readline().strip() == "ready"
        assert _learned() == 0  # the copy is used while Redis answered a PING in the last second
        for n in range(1, 41):
            writer.stdin.write(f"{n * 1000}\n")
            writer.stdin.flush()
            assert writer.stdout.readline().strip() == "ok"
            # No wait: the write was acknowledged, so its invalidation is already here.
            assert _read() == n * 1000, f"write {n} not seen"
            assert _known() == n * 1000
    finally:
        writer.stdin.close()
        writer.wait(30)


def test_a_reply_that_raced_a_write_is_not_kept(server):
    known, ticket = redis_watch.lookup(NAME)
    assert known is None and ticket is not None
    redis_watch.forget(NAME)  # a write of the key landed after the read was sent
    redis_watch.learn(ticket, NAME, 0)
    assert _known() is None
    known, ticket = redis_watch.lookup(NAME)
    redis_watch.learn(ticket, NAME, 0)
    assert _known() == 0


def test_a_flush_forgets_everything(server):
    assert _learned() == 0
    redis.Redis.from_url(server.url).flushdb()
    assert _known() is None
    assert _read() is None  # the map is new: the primary answers


def test_redis_stopped_forgets_everything_and_reads_ask_the_primary(server):
    assert _learned() == 0
    server.stop()
    assert _known() is None
    assert _read() is None


def test_a_silent_redis_stops_the_copy_within_the_bound(server, settings):
    settings.DATABASE_REPLICA_POSITION_WATCH_SECONDS = 0.4
    assert _learned() == 0
    os.kill(server.process.pid, signal.SIGSTOP)  # up, connected, never answering
    try:
        deadline = time.monotonic() + 0.4 + 0.2
        while _known() is not None:
            assert time.monotonic() < deadline, "the copy outlived its bound"
            time.sleep(0.02)
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
    deadline = time.monotonic() + 5
    while _known() is None:  # Redis answers the ping again: the copy is back
        assert time.monotonic() < deadline
        _read()
        time.sleep(0.05)


def test_off_keeps_nothing(server, settings):
    settings.DATABASE_REPLICA_POSITION_WATCH_SECONDS = 0
    assert _read() == 0
    assert _read() == 0
    assert redis_watch.lookup(NAME) == (None, None)


def test_a_new_start_of_the_map_forgets_everything(server):
    assert _learned() == 0
    client = redis.Redis.from_url(server.url)
    client.set(positions.SENTINEL, client.time()[0])  # as a restart's first script sets it
    assert _known() is None
    assert _read() is None  # the map is young again: the primary answers
