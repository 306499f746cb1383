"""Fixtures for the extraction tests: the fake Messages server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memoryadmin.testing.fake_anthropic import FakeAnthropic, serving


@pytest.fixture
def fake_anthropic(settings: Any) -> Iterator[FakeAnthropic]:
    """A running fake Messages server; the Django settings point the real SDK at it."""
    with serving(settings) as server:
        yield server
