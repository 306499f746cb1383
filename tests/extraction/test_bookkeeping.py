"""What one turn costs in SQL, and the bookkeeping that the fewer statements must still keep:
the attempt counted before the call, one write whatever the deliveries.

Transactional tests: the statements counted are the ones a worker sends (BEGIN and COMMIT
included), not savepoints inside a test's own transaction."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memoryadmin.extraction import runtime, services
from memoryadmin.extraction.models import ExtractionJob, JobStatus
from memoryadmin.facts import selectors
from memoryadmin.facts import services as fact_services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent
from memoryadmin.facts.validation import session_tag
from memoryadmin.testing.fake_anthropic import FakeAnthropic, tool_use

pytestmark = pytest.mark.django_db(transaction=True)

THREE = [
    {
        "key": "seat_preference",
        "value": "Prefers a window seat on night flights",
        "category": "preference",
    },
    {
        "key": "meal_note",
        "value": "Asks for the fruit platter instead of dessert",
        "category": "preference",
    },
    {
        "key": "connection_time",
        "value": "Wants at least 90 minutes to connect",
        "category": "constraint",
    },
]
TURN = [{"role": "user", "text": "Window at night, fruit not dessert, 90 minutes to connect."}]


def drafts(facts: list[dict[str, str]]) -> list[fact_services.FactDraft]:
    return [fact_services.FactDraft(f["key"], f["value"], f["category"]) for f in facts]


def held_subject(subject_id: str) -> None:
    """A traveller the system already knows (the usual case: the subject row exists)."""
    fact_services.fact_upsert(
        subject_id=subject_id,
        facts=[fact_services.FactDraft("home_airport", "Flies from Oslo", "preference")],
        actor=Actor.system("seed"),
        reason="held before the test",
    )


def new_job(subject_id: str, turn_id: str = "t-1") -> ExtractionJob:
    job, created = services.job_create_or_get(
        subject_id=subject_id,
        session_tag=session_tag("s-1"),
        turn_id=turn_id,
        messages=TURN,
    )
    assert created
    return job


def statements(queries: CaptureQueriesContext) -> list[str]:
    return [query["sql"] for query in queries.captured_queries]


def on_jobs(sqls: list[str]) -> list[str]:
    return [sql for sql in sqls if "extraction_job" in sql]


def test_one_turn_costs_the_fact_write_plus_four_statements(
    fake_anthropic: FakeAnthropic,
) -> None:
    """The baseline is fact_upsert of three facts on its own, measured here, so the bound
    follows the write and pins only what extraction adds: the statement that starts the job
    (and reads all it needs) and the statement that ends the job, in the write's transaction
    with no savepoint of its own. Before, a turn added about 16 statements in 4 transactions."""
    held_subject("count-write")
    held_subject("count-turn")
    selectors.memory_config()  # the per-process cache is warm on a busy worker
    with CaptureQueriesContext(connection) as write:
        fact_services.fact_upsert(
            subject_id="count-write",
            facts=drafts(THREE),
            actor=Actor.extraction(),
            reason="baseline",
            session_tag=session_tag("s-1"),
        )
    fake_anthropic.script(tool_use(THREE))
    job = new_job("count-turn")

    with CaptureQueriesContext(connection) as turn:
        finished = runtime.extract_turn(job.pk)

    assert finished is not None and (finished.status, finished.stored) == (JobStatus.SUCCEEDED, 3)
    sqls = statements(turn)
    assert len(sqls) <= len(statements(write)) + 2, "\n".join(sqls)
    assert not any("SAVEPOINT" in sql for sql in sqls), "\n".join(sqls)
    assert len(on_jobs(sqls)) == 2, "\n".join(on_jobs(sqls))  # start, end: no extra reads
    assert sum(sql == "BEGIN" for sql in sqls) == 1  # one transaction: the write and the end
    assert sum(sql == "COMMIT" for sql in sqls) == 1


def test_a_turn_with_nothing_new_writes_no_fact_and_stays_small(
    fake_anthropic: FakeAnthropic,
) -> None:
    held_subject("count-dup")
    fact_services.fact_upsert(
        subject_id="count-dup",
        facts=drafts(THREE),
        actor=Actor.system("seed"),
        reason="held",
    )
    selectors.memory_config()
    fake_anthropic.script(tool_use(THREE))
    job = new_job("count-dup")

    with CaptureQueriesContext(connection) as turn:
        finished = runtime.extract_turn(job.pk)

    assert finished is not None and (finished.stored, finished.duplicates) == (0, 3)
    sqls = statements(turn)
    # start; end (every proposal was a duplicate: nothing to write, so the statement that
    # ends the job is a transaction of its own)
    assert sqls == on_jobs(sqls) and len(sqls) == 2, "\n".join(sqls)


def test_a_skipped_turn_calls_no_model_and_counts_no_attempt(
    fake_anthropic: FakeAnthropic,
) -> None:
    held_subject("count-paused")
    fact_services.subject_set_preferences(
        subject_id="count-paused", actor=Actor.customer("count-paused"), memory_paused=True
    )
    job = new_job("count-paused")
    finished = runtime.extract_turn(job.pk)
    assert finished is not None and finished.status == JobStatus.SKIPPED
    assert "paused" in finished.reason
    job.refresh_from_db()
    assert (job.attempts, job.model, job.transcript) == (0, "", None)
    assert job.prompt_version == ""  # no model called, no prompt sent
    assert fake_anthropic.requests == []


def test_the_attempt_and_the_running_state_are_committed_before_the_model_answers(
    fake_anthropic: FakeAnthropic,
) -> None:
    seen: dict[str, Any] = {}

    def look() -> None:  # another connection, while the call is in flight
        row = ExtractionJob.objects.get(pk=job.pk)
        seen.update(
            status=row.status,
            attempts=row.attempts,
            model=row.model,
            started=row.started_at is not None,
        )

    fake_anthropic.script(tool_use(THREE[:1], callback=look))
    job = new_job("in-flight")
    runtime.extract_turn(job.pk)

    assert seen == {
        "status": JobStatus.RUNNING,
        "attempts": 1,
        "model": "claude-haiku-4-5-20251001",
        "started": True,
    }
    job.refresh_from_db()
    assert (job.status, job.attempts, job.stored) == (JobStatus.SUCCEEDED, 1, 1)


def test_a_second_delivery_that_loses_the_race_writes_nothing(
    fake_anthropic: FakeAnthropic,
) -> None:
    """Two deliveries of one job run at once (the reaper re-sent a slow one): the one that
    ends the job first keeps its facts; the other's write is rolled back, whatever its model
    answered, and it returns None."""
    window = {"key": "seat_preference", "value": "Prefers window seats", "category": "preference"}
    aisle = {"key": "seat_preference", "value": "Prefers aisle seats", "category": "preference"}
    held_subject("twice")
    job = new_job("twice")
    inner: dict[str, Any] = {}

    def the_other_delivery() -> None:  # runs to its end while the first call is in flight
        inner["job"] = runtime.extract_turn(job.pk)

    fake_anthropic.script(tool_use([aisle], callback=the_other_delivery), tool_use([window]))

    outer = runtime.extract_turn(job.pk)

    assert outer is None
    assert inner["job"] is not None and inner["job"].status == JobStatus.SUCCEEDED
    job.refresh_from_db()
    assert (job.status, job.stored, job.attempts) == (JobStatus.SUCCEEDED, 1, 2)
    assert selectors.subject_fact("twice", "seat_preference").value == "Prefers window seats"
    assert FactEvent.objects.filter(subject_id="twice", key="seat_preference").count() == 1
    assert len(fake_anthropic.requests) == 2


def _synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


def test_only_the_statement_that_starts_a_job_skips_the_wal_flush() -> None:
    """job_begin's commit does not wait for the WAL flush; nothing after it may inherit that,
    least of all the transaction that writes the facts."""
    assert _synchronous_commit() == "on"
    assert services.job_begin(new_job("flush").pk, may_call=True, model="m") is not None
    assert _synchronous_commit() == "on"  # it lasted for that statement's transaction only
    with transaction.atomic():  # inside a caller's transaction, the caller's commit decides
        assert services.job_begin(new_job("flush", "t-2").pk, may_call=True) is not None
        assert _synchronous_commit() == "on"
