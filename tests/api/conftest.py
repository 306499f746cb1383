"""Fixtures for the agent API tests: tokens, an authenticated client, and a snapshot of
everything a request could have written (to prove refused requests wrote nothing)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from memoryadmin.api.models import IdempotencyRecord, Scope, ServiceToken
from memoryadmin.api.throttling import throttle_leases_clear
from memoryadmin.api.tokens import token_issue
from memoryadmin.extraction.models import ExtractionJob
from memoryadmin.facts.models import FactEvent, MemoryFact, Subject

ALL_SCOPES = tuple(Scope.values)
MEMORY_SCOPES = (Scope.MEMORY_READ.value, Scope.MEMORY_WRITE.value)


def facts_url(subject_id: str, *rest: str) -> str:
    parts = [quote(subject_id, safe=""), "facts", *(quote(part, safe="") for part in rest)]
    return "/api/v1/subjects/" + "/".join(parts)


def subject_url(subject_id: str, tail: str) -> str:
    return f"/api/v1/subjects/{quote(subject_id, safe='')}/{tail}"


def db_state() -> dict[str, Any]:
    """Everything an agent request could change, in comparable form."""
    return {
        "facts": sorted(
            MemoryFact.objects.values_list("subject_id", "key", "value", "version", "status")
        ),
        "events": FactEvent.objects.count(),
        "subjects": sorted(Subject.objects.values_list("subject_id", "purge_generation")),
        "idempotency": IdempotencyRecord.objects.count(),
        "jobs": sorted(ExtractionJob.objects.values_list("subject_id", "turn_id", "status")),
    }


@dataclass
class AgentClient:
    """An APIClient authenticated with a freshly issued token."""

    client: APIClient
    token: ServiceToken
    secret: str

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


@pytest.fixture(autouse=True)
def _fresh_throttle_counts():
    """Throttle counters live in the default cache; never let one test's requests count in
    another's."""
    cache.clear()
    throttle_leases_clear()
    yield
    cache.clear()
    throttle_leases_clear()


@pytest.fixture
def issue_token(db) -> Callable[..., tuple[ServiceToken, str]]:
    def issue(*scopes: str, name: str = "agent-host") -> tuple[ServiceToken, str]:
        return token_issue(name=name, scopes=scopes or MEMORY_SCOPES)

    return issue


@pytest.fixture
def make_agent(issue_token) -> Callable[..., AgentClient]:
    def make(*scopes: str, name: str = "agent-host") -> AgentClient:
        token, secret = issue_token(*scopes, name=name)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return AgentClient(client, token, secret)

    return make


@pytest.fixture
def agent(make_agent) -> AgentClient:
    """A client whose token holds memory:read and memory:write."""
    return make_agent()
