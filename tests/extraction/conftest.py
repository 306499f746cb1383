"""Fixtures for the extraction tests: the fake Messages server and small helpers."""

from tests.extraction.fake_anthropic import fake_anthropic  # noqa: F401 - a fixture
