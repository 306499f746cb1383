"""Who may call what: every endpoint against a missing, unknown, revoked or under-scoped token.
Refused requests answer 401/403 in the error shape and leave the database exactly as it was."""

from __future__ import annotations

import hashlib

import pytest
from rest_framework.test import APIClient

from memoryadmin.api.models import Scope
from memoryadmin.api.tokens import token_issue, token_revoke
from memoryadmin.extraction.services import job_create_or_get
from tests.factories import FactFactory

from .conftest import db_state, facts_url, subject_url

pytestmark = pytest.mark.django_db

SUBJECT = "FF-0002"
READ = Scope.MEMORY_READ.value
WRITE = Scope.MEMORY_WRITE.value
TURNS = Scope.TURNS_WRITE.value
TURN = {"session_id": "s-1", "turn_id": "t-2", "messages": [{"role": "user", "text": "Aisle"}]}

# (method, url, JSON body, the scope the endpoint needs)
ENDPOINTS = [
    ("get", facts_url(SUBJECT), None, READ),
    ("put", facts_url(SUBJECT), {"facts": [{"key": "seat_preference", "value": "Window"}]}, WRITE),
    ("get", facts_url(SUBJECT, "seat_preference"), None, READ),
    ("put", facts_url(SUBJECT, "seat_preference"), {"value": "Window"}, WRITE),
    ("delete", facts_url(SUBJECT, "seat_preference"), None, WRITE),
    ("get", facts_url(SUBJECT, "search") + "?q=aisle", None, READ),
    ("get", subject_url(SUBJECT, "tier-one"), None, READ),
    ("post", subject_url(SUBJECT, "clear"), None, WRITE),
    ("get", subject_url(SUBJECT, "purge-generation"), None, READ),
    ("post", subject_url(SUBJECT, "turns"), TURN, TURNS),
    ("get", "/api/v1/jobs/{job}", None, TURNS),
    ("post", subject_url(SUBJECT, "portal-links"), None, Scope.PORTAL_ISSUE.value),
]
ENDPOINT_IDS = [f"{method.upper()} {url}" for method, url, _, _ in ENDPOINTS]


@pytest.fixture
def seeded():
    """A fact that a write, delete or clear would visibly change, and a job to read."""
    FactFactory(subject_id=SUBJECT, key="seat_preference", value="Prefers aisle seats")
    job, _ = job_create_or_get(
        subject_id=SUBJECT,
        session_tag="0123456789ab",
        turn_id="t-1",
        messages=TURN["messages"],
        skip_reason="seeded for the auth matrix",
        created_by_label="token:exact-host",  # the job reader below must be its poster
    )
    return db_state() | {"job_id": str(job.public_id)}


def _call(client: APIClient, method: str, url: str, body: dict | None, seeded: dict):
    url = url.replace("{job}", str(seeded["job_id"]))
    kwargs = {"format": "json"} if body is not None else {}
    return (
        getattr(client, method)(url, body, **kwargs)
        if body is not None
        else getattr(client, method)(url)
    )


def _with_header(value: str | None) -> APIClient:
    client = APIClient()
    if value is not None:
        client.credentials(HTTP_AUTHORIZATION=value)
    return client


def _assert_401(response) -> None:
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    error = response.json()["error"]
    assert error["code"] in {"not_authenticated", "authentication_failed"}
    assert error["message"]


@pytest.mark.parametrize(("method", "url", "body", "scope"), ENDPOINTS, ids=ENDPOINT_IDS)
@pytest.mark.parametrize(
    "header",
    [
        None,
        "Bearer mat_not-a-real-token",
        "Bearer",
        "Bearer two parts",
        "Basic dXNlcjpwYXNz",
        "Token mat_whatever",
    ],
    ids=[
        "no-header",
        "unknown-token",
        "bearer-without-token",
        "bearer-with-spaces",
        "basic-auth",
        "other-scheme",
    ],
)
def test_without_a_valid_token_every_endpoint_is_401_and_writes_nothing(
    seeded, method, url, body, scope, header
):
    response = _call(_with_header(header), method, url, body, seeded)

    _assert_401(response)
    assert db_state() | {"job_id": seeded["job_id"]} == seeded


@pytest.mark.parametrize(("method", "url", "body", "scope"), ENDPOINTS, ids=ENDPOINT_IDS)
def test_a_revoked_token_is_401_and_writes_nothing(seeded, method, url, body, scope):
    token, secret = token_issue(name="revoked-host", scopes=Scope.values)
    token_revoke(token=token)
    seeded = db_state() | {"job_id": seeded["job_id"]}

    response = _call(_with_header(f"Bearer {secret}"), method, url, body, seeded)

    _assert_401(response)
    assert db_state() | {"job_id": seeded["job_id"]} == seeded


@pytest.mark.parametrize(("method", "url", "body", "scope"), ENDPOINTS, ids=ENDPOINT_IDS)
def test_a_token_without_the_needed_scope_is_403_and_writes_nothing(
    seeded, method, url, body, scope
):
    others = [s for s in Scope.values if s != scope]
    _, secret = token_issue(name="narrow-host", scopes=others)

    response = _call(_with_header(f"Bearer {secret}"), method, url, body, seeded)

    assert response.status_code == 403
    error = response.json()["error"]
    assert error["code"] == "insufficient_scope"
    assert scope in error["message"]
    assert db_state() | {"job_id": seeded["job_id"]} == seeded


@pytest.mark.parametrize(("method", "url", "body", "scope"), ENDPOINTS, ids=ENDPOINT_IDS)
def test_a_token_with_just_the_needed_scope_gets_through(seeded, method, url, body, scope):
    _, secret = token_issue(name="exact-host", scopes=[scope])

    response = _call(_with_header(f"Bearer {secret}"), method, url, body, seeded)

    assert response.status_code in {200, 201, 202, 204}


def test_the_scheme_keyword_is_case_insensitive(seeded):
    _, secret = token_issue(name="host", scopes=[READ])

    response = _call(_with_header(f"bearer {secret}"), "get", facts_url(SUBJECT), None, seeded)

    assert response.status_code == 200


def test_bad_input_from_an_unauthenticated_caller_is_401_not_400(seeded):
    response = _with_header(None).put(
        facts_url("x" * 200), data=b"{not json", content_type="application/json"
    )

    _assert_401(response)


def test_the_secret_is_not_stored_anywhere(seeded):
    token, secret = token_issue(name="host", scopes=[READ])

    assert token.token_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert token.prefix == secret[:8]
    stored = [str(value) for value in token.__class__.objects.values_list().get(pk=token.pk)]
    assert not any(secret in value for value in stored)
