"""The `used` member of POST .../turns rides on the turn's job row (the request writes nothing
more for it) and is recorded off the request: by the job's task, or by the beat sweep for a job
that has no task; kept through a broker outage; wiped with "forget everything"."""

from __future__ import annotations

from typing import Any

import pytest

from memoryadmin.api.models import Scope
from memoryadmin.extraction import services as extraction_services
from memoryadmin.extraction.models import ExtractionJob, JobStatus
from memoryadmin.extraction.tasks import extract_turn_task
from memoryadmin.facts.keyhash import key_digest
from memoryadmin.testing.fake_anthropic import FakeAnthropic, tool_use
from memoryadmin.usage.models import MemoryUse
from memoryadmin.usage.tasks import record_waiting_uses_task
from tests.api.conftest import subject_url
from tests.extraction.conftest import fake_anthropic  # noqa: F401
from tests.extraction.worker import publishing_to
from tests.support.writes import agent_upsert

pytestmark = [pytest.mark.django_db]
SUBJECT = "ride-1"
USED = {"injected": ["seat_preference", "meal"], "recalled": ["home_airport", "unknown"]}


@pytest.fixture
def held() -> None:
    agent_upsert(
        SUBJECT, ("seat_preference", "Aisle"), ("meal", "Vegetarian"), ("home_airport", "TPE")
    )


def receipts() -> list[tuple[str, str, str]]:
    return sorted(
        MemoryUse.objects.filter(subject_id=SUBJECT).values_list("key_hash", "turn_id", "how")
    )


EXPECTED = sorted(
    [
        (key_digest(SUBJECT, "seat_preference"), "t-1", "injected"),
        (key_digest(SUBJECT, "meal"), "t-1", "injected"),
        (key_digest(SUBJECT, "home_airport"), "t-1", "recalled"),
    ]
)


def test_a_queued_turn_keeps_its_receipts_through_a_broker_outage_and_its_task_records_them(
    make_agent: Any,
    held: None,
    fake_anthropic: FakeAnthropic,  # noqa: F811
    django_capture_on_commit_callbacks: Any,
) -> None:
    host = make_agent(Scope.TURNS_WRITE.value)
    with publishing_to("redis://127.0.0.1:1/0"), django_capture_on_commit_callbacks(execute=True):
        response = host.post(
            subject_url(SUBJECT, "turns"),
            {
                "session_id": "sess-1",
                "turn_id": "t-1",
                "messages": [{"role": "user", "text": "Aisle, as ever."}],
                "used": USED,
            },
            format="json",
        )
    assert response.status_code == 202, response.content
    job = ExtractionJob.objects.get(subject_id=SUBJECT)
    assert job.status == JobStatus.QUEUED and job.reason == extraction_services.BROKER_DOWN_REASON
    assert job.used == USED and receipts() == []  # waiting with the turn, not lost

    fake_anthropic.script(tool_use([]))
    extract_turn_task.apply(args=[job.pk])  # the broker is back: the job's own task runs
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED and job.used is None
    assert receipts() == EXPECTED


def test_a_job_without_a_task_has_its_receipts_recorded_by_the_sweep(held: None) -> None:
    job, created = extraction_services.job_create_or_get(
        subject_id=SUBJECT,
        session_tag="0123456789ab",
        turn_id="t-1",
        messages=[],
        skip_reason="memory is disabled",
        used=USED,
    )
    assert created and job.status == JobStatus.SKIPPED and receipts() == []
    record_waiting_uses_task.apply()
    assert receipts() == EXPECTED
    assert MemoryUse.objects.filter(session_tag="0123456789ab").count() == 3
    job.refresh_from_db()
    assert job.used is None
    record_waiting_uses_task.apply()  # taken once: nothing twice
    assert receipts() == EXPECTED


def test_a_replayed_turn_does_not_record_its_receipts_twice(make_agent: Any, held: None) -> None:
    host = make_agent(Scope.TURNS_WRITE.value)
    body = {
        "session_id": "sess-1",
        "turn_id": "t-1",
        "messages": [{"role": "user", "text": "hi"}],
        "used": USED,
    }
    assert host.post(subject_url(SUBJECT, "turns"), body, format="json").status_code == 202
    assert host.post(subject_url(SUBJECT, "turns"), body, format="json").status_code == 200
    record_waiting_uses_task.apply()
    assert receipts() == EXPECTED


def test_forget_everything_takes_waiting_receipts_with_the_transcript(held: None) -> None:
    from memoryadmin.facts import services as fact_services
    from memoryadmin.facts.actors import Actor

    extraction_services.job_create_or_get(
        subject_id=SUBJECT,
        session_tag="0123456789ab",
        turn_id="t-1",
        messages=[{"role": "user", "text": "hi"}],
        used=USED,
    )
    fact_services.subject_forget(subject_id=SUBJECT, actor=Actor.customer(SUBJECT))
    job = ExtractionJob.objects.get(subject_id=SUBJECT)
    assert (job.transcript, job.used) == (None, None)


def test_deleting_a_fact_takes_the_travellers_waiting_receipts(held: None) -> None:
    """They name keys: the erasing statement takes them."""
    from memoryadmin.facts import services as fact_services
    from memoryadmin.facts.actors import Actor

    extraction_services.job_create_or_get(
        subject_id=SUBJECT,
        session_tag="0123456789ab",
        turn_id="t-1",
        messages=[],
        skip_reason="memory is disabled",
        used=USED,
    )
    extraction_services.job_create_or_get(
        subject_id="ride-other",
        session_tag="0123456789ab",
        turn_id="t-1",
        messages=[],
        skip_reason="memory is disabled",
        used=USED,
    )
    fact_services.fact_delete(subject_id=SUBJECT, key="meal", actor=Actor.customer(SUBJECT))
    waiting = dict(ExtractionJob.objects.values_list("subject_id", "used"))
    assert waiting == {SUBJECT: None, "ride-other": USED}
