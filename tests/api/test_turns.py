"""POST /api/v1/subjects/{id}/turns and GET /api/v1/jobs/{id}, as an agent host sees them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from memoryadmin.api.tokens import token_issue, token_revoke
from memoryadmin.extraction.models import ExtractionJob, JobStatus
from memoryadmin.facts import selectors
from memoryadmin.facts import services as fact_services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent
from memoryadmin.facts.validation import session_tag
from memoryadmin.testing.fake_anthropic import FakeAnthropic, api_error, serving, tool_use

pytestmark = pytest.mark.django_db

RAW_SESSION = "sess_7f3a-SECRET-bearer-looking-token"
AISLE = {"key": "seat_preference", "value": "Prefers aisle seats", "category": "preference"}


@pytest.fixture
def fake_anthropic(settings: Any) -> Iterator[FakeAnthropic]:
    with serving(settings) as server:
        yield server


def turns_url(subject_id: str) -> str:
    return f"/api/v1/subjects/{quote(subject_id, safe='')}/turns"


def agent(*scopes: str, name: str = "agent-host") -> APIClient:
    _, secret = token_issue(name=name, scopes=scopes or ("turns:write",))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def turn(turn_id: str = "turn-1", **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "session_id": RAW_SESSION,
        "turn_id": turn_id,
        "messages": [
            {"role": "user", "text": "I always take an aisle seat."},
            {"role": "assistant", "text": "Noted, aisle seat selected."},
        ],
    }
    body.update(overrides)
    return body


def post(client: APIClient, subject_id: str, body: Any, run_task: Any = None) -> Any:
    """POST as JSON (ASCII-escaped, so even lone surrogates travel); with `run_task`
    (django_capture_on_commit_callbacks) the queued extraction runs before this returns."""
    raw = json.dumps(body)
    if run_task is None:
        return client.post(turns_url(subject_id), raw, content_type="application/json")
    with run_task(execute=True):
        return client.post(turns_url(subject_id), raw, content_type="application/json")


# --- the happy path ------------------------------------------------------------------------------


def test_posted_turn_is_accepted_and_learned(
    fake_anthropic: FakeAnthropic, django_capture_on_commit_callbacks: Any
) -> None:
    fake_anthropic.script(tool_use([AISLE]))
    client = agent("turns:write", "memory:read")

    response = post(client, "trav-1", turn(), django_capture_on_commit_callbacks)

    assert response.status_code == 202
    assert set(response.json()) == {"job_id", "status"}
    job_id = response.json()["job_id"]
    job = client.get(f"/api/v1/jobs/{job_id}").json()
    assert job["status"] == "succeeded"
    assert job["counts"] == {
        "proposed": 1,
        "stored": 1,
        "updated": 0,
        "duplicates": 0,
        "blocked": 0,
        "sent_to_review": 0,
        "invalid": 0,
        "cut_by_cap": 0,
    }
    assert job["usage"] == {"input_tokens": 321, "output_tokens": 54}
    assert job["model"] == "claude-haiku-4-5-20251001"
    assert job["attempts"] == 1 and job["reason"] == ""
    assert job["subject_id"] == "trav-1" and job["turn_id"] == "turn-1"
    assert job["queued_at"] and job["started_at"] and job["finished_at"]
    assert "transcript" not in job
    facts = client.get("/api/v1/subjects/trav-1/facts").json()["facts"]
    assert [(f["key"], f["value"]) for f in facts] == [("seat_preference", "Prefers aisle seats")]
    assert facts[0]["source_session_id"] == session_tag(RAW_SESSION)


def test_the_answer_does_not_wait_for_the_model(fake_anthropic: FakeAnthropic) -> None:
    """Without running the queued task, the job is simply queued: nothing is called inline."""
    response = post(agent(), "trav-q", turn())
    assert response.status_code == 202
    assert response.json()["status"] == "queued"
    job = ExtractionJob.objects.get(public_id=response.json()["job_id"])
    assert job.transcript == turn()["messages"]
    assert job.created_by_label == "token:agent-host"


def test_replays_return_the_same_job(
    fake_anthropic: FakeAnthropic, django_capture_on_commit_callbacks: Any
) -> None:
    fake_anthropic.script(tool_use([AISLE]))
    client = agent()
    first = post(client, "trav-2", turn(), django_capture_on_commit_callbacks)
    replays = [post(client, "trav-2", turn(), django_capture_on_commit_callbacks) for _ in range(5)]
    assert first.status_code == 202
    assert {r.status_code for r in replays} == {200}
    assert {r.json()["job_id"] for r in replays} == {first.json()["job_id"]}
    assert {r.json()["status"] for r in replays} == {"succeeded"}
    assert ExtractionJob.objects.filter(subject_id="trav-2").count() == 1
    assert len(fake_anthropic.requests) == 1
    assert FactEvent.objects.filter(subject_id="trav-2").count() == 1


def test_same_turn_id_in_another_session_or_subject_is_a_new_job() -> None:
    client = agent()
    ids = {
        post(client, "trav-3", turn()).json()["job_id"],
        post(client, "trav-3", turn(session_id="other-session")).json()["job_id"],
        post(client, "trav-4", turn()).json()["job_id"],
    }
    assert len(ids) == 3


def test_raw_session_id_is_never_stored(
    fake_anthropic: FakeAnthropic, django_capture_on_commit_callbacks: Any
) -> None:
    fake_anthropic.script(tool_use([AISLE]))
    post(agent(), "trav-5", turn(), django_capture_on_commit_callbacks)
    with connection.cursor() as cursor:
        for table in ("extraction_job", "memory_fact", "memory_fact_event"):
            cursor.execute(f"SELECT * FROM {table}")  # noqa: S608 - fixed table names
            assert RAW_SESSION not in repr(cursor.fetchall()), table
    assert ExtractionJob.objects.get().session_tag == session_tag(RAW_SESSION)


def test_control_characters_are_stripped_before_storage(fake_anthropic: FakeAnthropic) -> None:
    body = turn(messages=[{"role": "user", "text": "aisle\x1b[2J seat\u202e please\u200b"}])
    response = post(agent(), "trav-6", body)
    assert response.status_code == 202
    assert ExtractionJob.objects.get().transcript == [
        {"role": "user", "text": "aisle[2J seat please"}
    ]


@pytest.mark.parametrize("text", ["nul\x00byte", "lone\ud800surrogate"])
def test_text_postgres_cannot_store_is_a_400_not_a_500(
    text: str, fake_anthropic: FakeAnthropic
) -> None:
    raw = json.dumps(turn(messages=[{"role": "user", "text": text}]))  # ASCII-escaped JSON
    response = agent().post(turns_url("trav-7"), raw, content_type="application/json")
    assert response.status_code == 400
    assert "messages[0].text" in response.json()["error"]["fields"]
    assert not ExtractionJob.objects.exists()


def test_largest_allowed_turn_is_accepted(fake_anthropic: FakeAnthropic) -> None:
    body = turn(messages=[{"role": "user", "text": "x" * 20_000}] * 200)
    assert post(agent(), "trav-big", body).status_code == 202


# --- learning that is switched off ---------------------------------------------------------------


def test_paused_subject_gets_a_skipped_job_and_no_stored_transcript(
    fake_anthropic: FakeAnthropic,
) -> None:
    fact_services.subject_set_preferences(
        subject_id="trav-p", actor=Actor.customer("trav-p"), memory_paused=True
    )
    response = post(agent(), "trav-p", turn())
    assert response.status_code == 202
    assert response.json()["status"] == "skipped"
    job = ExtractionJob.objects.get()
    assert job.transcript is None and "paused" in job.reason
    assert fake_anthropic.requests == []


def test_without_a_model_key_the_turn_is_accepted_and_skipped(settings: Any) -> None:
    settings.ANTHROPIC_API_KEY = ""
    client = agent()
    response = post(client, "trav-nokey", turn())
    assert response.status_code == 202
    job = client.get(f"/api/v1/jobs/{response.json()['job_id']}").json()
    assert job["status"] == "skipped" and "ANTHROPIC_API_KEY" in job["reason"]


# --- memory never fails a turn ------------------------------------------------------------------


def test_model_returning_500s_still_answers_202_and_the_job_records_it(
    fake_anthropic: FakeAnthropic, django_capture_on_commit_callbacks: Any
) -> None:
    fake_anthropic.fallback = api_error(500)
    client = agent()
    response = post(client, "trav-down", turn(), django_capture_on_commit_callbacks)
    assert response.status_code == 202
    job = client.get(f"/api/v1/jobs/{response.json()['job_id']}").json()
    assert job["status"] == "failed"
    assert "HTTP 500" in job["reason"] and "gave up after 6 attempts" in job["reason"]
    assert job["attempts"] == 6
    assert selectors.subject_facts("trav-down") == []


def test_model_server_gone_still_answers_202(
    fake_anthropic: FakeAnthropic, django_capture_on_commit_callbacks: Any
) -> None:
    fake_anthropic.stop()
    client = agent()
    response = post(client, "trav-gone", turn(), django_capture_on_commit_callbacks)
    assert response.status_code == 202
    job = client.get(f"/api/v1/jobs/{response.json()['job_id']}").json()
    assert job["status"] == "failed" and "unreachable" in job["reason"]


def test_model_refusing_the_key_still_answers_202(
    fake_anthropic: FakeAnthropic, django_capture_on_commit_callbacks: Any
) -> None:
    fake_anthropic.fallback = api_error(401, "invalid x-api-key")
    client = agent()
    response = post(client, "trav-401", turn(), django_capture_on_commit_callbacks)
    assert response.status_code == 202
    job = client.get(f"/api/v1/jobs/{response.json()['job_id']}").json()
    assert job["status"] == "failed" and "HTTP 401" in job["reason"] and job["attempts"] == 1


# --- who may ask ---------------------------------------------------------------------------------


def test_no_token_is_401_in_the_house_shape() -> None:
    response = APIClient().post(turns_url("trav-a"), turn(), format="json")
    assert response.status_code == 401
    assert set(response.json()["error"]) == {"code", "message", "fields"}
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert APIClient().get("/api/v1/jobs/1").status_code == 401
    assert not ExtractionJob.objects.exists()


def test_token_without_turns_scope_is_403() -> None:
    reader = agent("memory:read", "memory:write")
    response = post(reader, "trav-a", turn())
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_scope"
    job_id = post(agent(), "trav-a", turn()).json()["job_id"]
    assert reader.get(f"/api/v1/jobs/{job_id}").status_code == 403
    assert ExtractionJob.objects.count() == 1


def test_revoked_token_is_401() -> None:
    token, secret = token_issue(name="old-host", scopes=["turns:write"])
    token_revoke(token=token)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert post(client, "trav-a", turn()).status_code == 401


# --- bad input -----------------------------------------------------------------------------------

BAD_BODIES = [
    ("no messages", turn(messages=[]), "messages"),
    ("too many messages", turn(messages=[{"role": "user", "text": "hi"}] * 201), "messages"),
    ("text too long", turn(messages=[{"role": "user", "text": "x" * 20_001}]), "messages[0].text"),
    ("unknown role", turn(messages=[{"role": "system", "text": "hi"}]), "messages[0].role"),
    ("text not a string", turn(messages=[{"role": "user", "text": {"a": 1}}]), "messages[0].text"),
    ("message not an object", turn(messages=["hello"]), "messages[0]"),
    ("messages not a list", turn(messages="hello"), "messages"),
    ("missing session_id", {k: v for k, v in turn().items() if k != "session_id"}, "session_id"),
    ("missing turn_id", {k: v for k, v in turn().items() if k != "turn_id"}, "turn_id"),
    ("blank session_id", turn(session_id="  "), "session_id"),
    ("session_id too long", turn(session_id="s" * 129), "session_id"),
    ("turn_id too long", turn("t" * 129), "turn_id"),
    ("turn_id with control chars", turn("t\x1b[2J"), "turn_id"),
    ("session_id with a lone surrogate", turn(session_id="s\ud800"), "session_id"),
    ("body is a list", [turn()], "body"),
]


@pytest.mark.parametrize(
    ("body", "field"), [(b, f) for _, b, f in BAD_BODIES], ids=[name for name, _, _ in BAD_BODIES]
)
def test_bad_bodies_are_400_with_field_messages(body: Any, field: str) -> None:
    response = post(agent(), "trav-bad", body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert field in error["fields"], error["fields"]
    assert not ExtractionJob.objects.exists()


@pytest.mark.parametrize("subject_id", ["s" * 129, "has space", "tab\there"])
def test_bad_subject_ids_are_400(subject_id: str) -> None:
    response = post(agent(), subject_id, turn())
    assert response.status_code == 400
    assert "subject_id" in response.json()["error"]["fields"]
    assert not ExtractionJob.objects.exists()


def test_malformed_json_is_400_and_not_json_is_415() -> None:
    client = agent()
    response = client.post(turns_url("trav-j"), b"{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_json"
    response = client.post(turns_url("trav-j"), b"hello", content_type="text/plain")
    assert response.status_code == 415
    assert not ExtractionJob.objects.exists()


@pytest.mark.parametrize("job_id", ["999999", "9223372036854775808", "0"])
def test_unknown_job_is_404(job_id: str) -> None:
    response = agent().get(f"/api/v1/jobs/{job_id}")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_job_status_while_queued(fake_anthropic: FakeAnthropic) -> None:
    client = agent()
    job_id = post(client, "trav-q2", turn()).json()["job_id"]
    job = client.get(f"/api/v1/jobs/{job_id}").json()
    assert job["status"] == JobStatus.QUEUED
    assert job["started_at"] is None and job["finished_at"] is None
    assert job["attempts"] == 0


# --- documentation -------------------------------------------------------------------------------


def test_openapi_schema_documents_both_operations() -> None:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    post_op = schema["paths"]["/api/v1/subjects/{subject_id}/turns"]["post"]
    assert post_op["operationId"] == "turns_create"
    assert {"202", "200", "400", "401", "403"} <= set(post_op["responses"])
    body = schema["components"]["schemas"]["TurnRequest"]
    assert set(body["required"]) == {"session_id", "turn_id", "messages"}
    assert body["properties"]["messages"]["maxItems"] == 200
    assert body["properties"]["messages"]["minItems"] == 1
    message = schema["components"]["schemas"]["TurnMessageRequest"]["properties"]
    assert message["text"]["maxLength"] == 20000
    get_op = schema["paths"]["/api/v1/jobs/{job_id}"]["get"]
    assert get_op["operationId"] == "jobs_retrieve"
    assert {"200", "404"} <= set(get_op["responses"])
    job = schema["components"]["schemas"]["Job"]["properties"]
    assert "transcript" not in job
    status = job["status"]
    if "$ref" in status:
        status = schema["components"]["schemas"][status["$ref"].rsplit("/", 1)[1]]
    assert status["enum"] == ["queued", "running", "succeeded", "skipped", "failed"]


def test_forget_everything_before_extraction_leaves_no_transcript(
    fake_anthropic: FakeAnthropic, django_capture_on_commit_callbacks: Any
) -> None:
    fake_anthropic.script(tool_use([AISLE]))
    client = agent("turns:write", "memory:write")
    with django_capture_on_commit_callbacks(execute=False) as queued:
        job_id = post(client, "trav-forget", turn()).json()["job_id"]
    assert ExtractionJob.objects.get(public_id=job_id).transcript is not None

    assert client.post("/api/v1/subjects/trav-forget/clear").status_code in {200, 204}
    assert ExtractionJob.objects.get(public_id=job_id).transcript is None  # no copy survives
    for callback in queued:  # the queued extraction runs after the clear
        callback()

    job = client.get(f"/api/v1/jobs/{job_id}").json()
    assert job["status"] == "skipped" and "erased" in job["reason"]
    assert fake_anthropic.requests == []
    assert selectors.subject_facts("trav-forget") == []


# --- who may read a job --------------------------------------------------------------------------


def test_a_job_is_readable_only_by_tokens_of_the_host_that_posted_it() -> None:
    poster = agent(name="host-a")
    rotated = agent(name="host-a")  # a second token of the same host
    stranger = agent(name="host-b")
    job_id = post(poster, "trav-own", turn()).json()["job_id"]

    assert poster.get(f"/api/v1/jobs/{job_id}").status_code == 200
    assert rotated.get(f"/api/v1/jobs/{job_id}").status_code == 200
    refused = stranger.get(f"/api/v1/jobs/{job_id}")
    assert refused.status_code == 404
    assert refused.json()["error"]["code"] == "not_found"


def test_job_ids_are_random_not_sequential() -> None:
    import uuid

    client = agent()
    ids = [post(client, "trav-ids", turn(f"t-{n}")).json()["job_id"] for n in range(3)]
    jobs = ExtractionJob.objects.filter(subject_id="trav-ids").order_by("pk")

    assert [uuid.UUID(job_id).version for job_id in ids] == [4, 4, 4]
    assert ids == [str(job.public_id) for job in jobs]
    assert all(str(job.pk) not in ids for job in jobs)
    assert client.get(f"/api/v1/jobs/{jobs[0].pk}").status_code == 404  # the row id is no key
