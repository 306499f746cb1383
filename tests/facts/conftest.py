"""Fixtures shared by the tests of DjangoMemoryStore's native async path."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from memoryadmin.db import pool as store_pool


@pytest.fixture(scope="module")
def host_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An agent host's event loop in a thread of its own, where the store's pool lives."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    asyncio.run_coroutine_threadsafe(store_pool.close_pools(), loop).result(10)
    # A stale settings cache is refreshed through sync_to_async, whose thread keeps a Django
    # connection of its own: close it, or the test database cannot be dropped.
    asyncio.run_coroutine_threadsafe(sync_to_async(connections.close_all)(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()
