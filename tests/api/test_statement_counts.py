"""The agent API's hot paths in a fixed number of SQL statements, whatever the batch size: the
token comes from the process cache, settings and rules from theirs, an upsert is a fixed set of
statements, and the answer is built from what the write committed (no read after it)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor

from .conftest import facts_url, subject_url

pytestmark = pytest.mark.django_db


def _statements(send) -> list[str]:
    """The statements a request ran, without the SAVEPOINT/RELEASE pair that the test's own
    transaction adds around the service's atomic block."""
    with CaptureQueriesContext(connection) as queries:
        response = send()
    assert response.status_code in (200, 201), response.content
    return [
        q["sql"]
        for q in queries.captured_queries
        if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))
    ]


@pytest.mark.parametrize("size", [3, 30])
def test_a_batch_put_is_the_same_few_statements_whatever_its_size(agent, size):
    agent.get(subject_url("FF-1", "tier-one"))  # token and settings now cached
    services.fact_upsert(  # the traveller exists (a first write also creates their row)
        subject_id="FF-1", facts=[services.FactDraft("seat", "Aisle")], actor=Actor.system("t")
    )
    first = [{"key": f"topic_{n}", "value": f"First value {n}"} for n in range(size)]
    second = [{"key": f"topic_{n}", "value": f"Second value {n}"} for n in range(size)]
    created = _statements(lambda: agent.put(facts_url("FF-1"), {"facts": first}, format="json"))
    updated = _statements(lambda: agent.put(facts_url("FF-1"), {"facts": second}, format="json"))
    # lock the traveller, read the named facts, one INSERT (an update: one UPDATE), one event
    # INSERT, the agent's view inside the same transaction.
    assert len(created) == 5
    assert len(updated) == 5
    assert not any("memory_settings" in sql or "api_service_token" in sql for sql in updated)


def test_a_single_put_answers_without_reading_the_fact_again(agent):
    agent.get(subject_url("FF-2", "tier-one"))
    services.fact_upsert(
        subject_id="FF-2", facts=[services.FactDraft("seat", "Aisle")], actor=Actor.system("t")
    )
    sqls = _statements(
        lambda: agent.put(facts_url("FF-2", "seat"), {"value": "Window"}, format="json")
    )
    assert len(sqls) == 4  # lock, read, UPDATE, event INSERT
    reads_of_facts = [
        sql
        for sql in sqls
        if sql.lstrip().upper().startswith("SELECT")
        and "memory_fact" in sql
        and "FOR UPDATE" not in sql
    ]
    assert len(reads_of_facts) == 1  # the one inside the write, before it


def test_agent_reads_over_http_are_one_statement(agent):
    agent.get(subject_url("FF-3", "tier-one"))
    for path in ("tier-one", "facts", "facts/search?q=aisle"):
        assert len(_statements(lambda p=path: agent.get(subject_url("FF-3", p)))) == 1


def test_agent_requests_get_no_session_and_no_cookie(agent):
    """The staff idle timeout touches staff sessions only; an agent host is not sent a session
    cookie, so its requests never read or write django_session."""
    for _ in range(2):
        response = agent.get(subject_url("FF-4", "tier-one"))
        assert response.status_code == 200
        assert "sessionid" not in response.cookies
    sqls = _statements(lambda: agent.get(subject_url("FF-4", "tier-one")))
    assert not any("django_session" in sql for sql in sqls)
