"""Ready to distribute (issue 31): every statement the agent's path runs against a table keyed by
traveller names exactly one traveller, so with the tables distributed on `subject_id` (Citus,
docs/ARCHITECTURE.md "Distributing by traveller") each one is routed to a single shard."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection

from tests.support.writes import agent_upsert

from .conftest import facts_url, subject_url

pytestmark = pytest.mark.django_db

TRAVELLER = "FF-dist-7"
OTHER = "FF-dist-8"
# The tables a distributed deployment would shard by subject_id, co-located.
BY_TRAVELLER = (
    "memory_subject",
    "memory_fact",
    "memory_fact_event",
    "memory_use",
    "extraction_job",
)
TABLE = re.compile(r"\b(" + "|".join(BY_TRAVELLER) + r")\b")


def _flat(params: Any) -> str:
    if isinstance(params, dict):
        params = list(params.values())
    return repr(params)


@contextmanager
def _statements() -> Iterator[list[tuple[str, str]]]:
    seen: list[tuple[str, str]] = []

    def wrapper(execute, sql, params, many, context):
        text = sql if isinstance(sql, str) else sql.as_string(None)
        seen.append((text, _flat(params)))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield seen


def _agent_path(agent) -> list[tuple[str, str]]:
    agent_upsert(OTHER, ("seat", "Window"))  # another traveller's rows exist
    with _statements() as seen:
        for send in (
            lambda: agent.get(subject_url(TRAVELLER, "tier-one")),
            lambda: agent.put(
                facts_url(TRAVELLER),
                {"facts": [{"key": "seat", "value": "Aisle"}, {"key": "meal", "value": "Vegan"}]},
                format="json",
            ),
            lambda: agent.put(facts_url(TRAVELLER, "seat"), {"value": "Window"}, format="json"),
            lambda: agent.get(subject_url(TRAVELLER, "tier-one")),
            lambda: agent.get(facts_url(TRAVELLER)),
            lambda: agent.get(facts_url(TRAVELLER, "seat")),
            lambda: agent.get(subject_url(TRAVELLER, "facts/search?q=aisle")),
            lambda: agent.post(
                subject_url(TRAVELLER, "usage"),
                {"session_id": "s-1", "turn_id": "t-1", "injected": ["seat", "meal"]},
                format="json",
            ),
            lambda: agent.get(subject_url(TRAVELLER, "purge-generation")),
            lambda: agent.delete(facts_url(TRAVELLER, "meal")),
        ):
            response = send()
            assert response.status_code < 300, response.content
    return seen


def test_every_statement_of_the_agents_path_names_one_traveller(agent):
    seen = _agent_path(agent)
    on_travellers = [(sql, params) for sql, params in seen if TABLE.search(sql)]
    assert len(on_travellers) >= 10  # the path really ran
    for sql, params in on_travellers:
        assert "subject_id" in sql, sql
        assert TRAVELLER in params or TRAVELLER in sql, (sql, params)
        assert OTHER not in params and OTHER not in sql, (sql, params)


def test_the_check_sees_a_statement_that_names_no_traveller(agent):
    """The check above can fail: a statement over every traveller's facts is caught."""
    with _statements() as seen, connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memory_fact")
    sql, params = seen[0]
    assert TABLE.search(sql) and "subject_id" not in sql and TRAVELLER not in params
