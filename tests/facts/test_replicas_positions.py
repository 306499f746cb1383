"""The read-your-writes positions in a real Redis (TEST_BROKER_URL's database): the write script
only moves a position forward, the read script answers the highest of its keys, and nothing is
trusted while the map is younger than its window (a restart, a flush)."""

from __future__ import annotations

import asyncio
import os

import pytest
import redis

from memoryadmin.db import positions
from memoryadmin.db.redis import fallback_reset

URL = os.environ.get("TEST_BROKER_URL", "redis://127.0.0.1:6379/15")


@pytest.fixture
def server(settings):
    settings.CACHE_URL = URL
    settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 5.0
    settings.DATABASE_REPLICA_CHECK_SECONDS = 1.0
    settings.DATABASE_READ_YOUR_WRITES_SECONDS = 60
    client = redis.Redis.from_url(URL)
    names = [positions.SENTINEL, *client.keys(positions.KEY_PREFIX + "*")]
    client.delete(*names)
    positions.reset()
    fallback_reset()
    yield client
    client.delete(positions.SENTINEL, *client.keys(positions.KEY_PREFIX + "*"))
    positions.reset()
    fallback_reset()


def _age(client: redis.Redis, seconds: int) -> None:
    """The map as if started `seconds` ago (by Redis's clock)."""
    now, _ = client.time()
    client.set(positions.SENTINEL, now - seconds)


def test_a_position_never_moves_backwards(server):
    _age(server, 1000)
    assert positions.needed(("s:A",)) == 0
    assert positions.store(("s:A",), 5000)
    assert positions.store(("s:A",), 4000)  # an earlier commit stored late
    assert positions.needed(("s:A",)) == 5000
    assert positions.store(("s:A",), 6000)
    assert positions.needed(("s:A",)) == 6000
    assert server.get(positions.KEY_PREFIX + "s:A") == b"0000000000001770"
    assert 0 < server.ttl(positions.KEY_PREFIX + "s:A") <= 60


@pytest.mark.parametrize(
    ("later", "earlier"),
    [
        (0x1_0000_0000, 0xFFFF_FFFF),  # across the halves the script compares
        (0xFFFF_FFFF_FFFF_FFF1, 0xFFFF_FFFF_FFFF_FFF0),  # past what a Lua number holds exactly
        (0x2_0000_0000, 0x1_FFFF_FFFF),
    ],
)
def test_positions_compare_exactly(server, later, earlier):
    _age(server, 1000)
    positions.store(("s:B",), later)
    positions.store(("s:B",), earlier)
    assert positions.needed(("s:B",)) == later
    positions.store(("s:C",), earlier)
    positions.store(("s:C",), later)
    assert positions.needed(("s:C",)) == later
    # The read answers the highest of several keys.
    positions.store(("s:D",), earlier)
    assert positions.needed(("s:D", "s:B", "s:none")) == later


def test_nothing_is_trusted_while_the_map_is_young(server):
    assert positions.window() == 7.0
    assert positions.needed(("s:E",)) is None  # no sentinel: a restart; it is set now
    assert server.exists(positions.SENTINEL)
    positions.store(("s:E",), 100)
    assert positions.needed(("s:E",)) is None  # started 0 s ago
    _age(server, 6)
    assert positions.needed(("s:E",)) is None  # still inside the window
    _age(server, 8)
    assert positions.needed(("s:E",)) == 100
    # A restart loses everything (here: the keys deleted): young again, not "nothing written".
    server.delete(positions.SENTINEL, positions.KEY_PREFIX + "s:E")
    assert positions.needed(("s:E",)) is None
    assert positions.needed(("s:E",)) is None


def test_a_write_starts_the_map_too(server):
    assert positions.store(("s:F",), 100)
    started = int(server.get(positions.SENTINEL))
    assert abs(server.time()[0] - started) <= 1
    assert positions.needed(("s:F",)) is None


def test_scripts_are_loaded_again_after_a_script_flush(server):
    _age(server, 1000)
    assert positions.store(("s:G",), 10)
    server.script_flush()
    assert positions.store(("s:G",), 20)
    server.script_flush()
    assert positions.needed(("s:G",)) == 20


def test_redis_down_means_ask_the_primary(settings, server):
    settings.CACHE_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    positions.reset()
    assert positions.needed(("s:J",)) is None
    assert positions.store(("s:J",), 1) is False


def test_the_async_path_does_the_same(server):
    _age(server, 1000)

    async def run() -> tuple:
        assert await positions.store_async(("s:K",), 300)
        assert await positions.store_async(("s:K",), 200)
        answers = await asyncio.gather(  # at once, each on a connection of the loop's client
            positions.needed_async(("s:L",)), positions.needed_async(("s:K",))
        )
        server.delete(positions.SENTINEL)
        young = await positions.needed_async(("s:K",))
        await positions.close_loop()
        return answers, young

    assert asyncio.run(run()) == ([0, 300], None)
