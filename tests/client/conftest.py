"""Fixtures for driving the client against the real API (pytest-django live_server)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from memoryadmin.api.models import Scope
from memoryadmin.api.tokens import token_issue
from memoryadmin_client.http import HttpMemoryStore

TOKEN_NAME = "a2-agent-host"


@pytest.fixture
def api_token(transactional_db) -> str:
    """The secret of a token with every scope, named TOKEN_NAME."""
    _, secret = token_issue(name=TOKEN_NAME, scopes=list(Scope.values))
    return secret


@pytest.fixture
def http_store(live_server, api_token):
    store = HttpMemoryStore(live_server.url, api_token, session_id="sess-http-1", backoff=0.01)
    yield store
    async_to_sync(store.aclose)()
