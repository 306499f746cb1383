"""Bad input never reaches the database: 400/422 with per-field messages in one error shape,
never a 500, never half-written, and refusals never repeat a refused value."""

from __future__ import annotations

import json

import pytest

from memoryadmin.api.errors import ApiError, api_exception_handler, error_response, flatten_errors
from memoryadmin.facts.models import MemorySettings
from tests.factories import FactFactory

from .conftest import db_state, facts_url, subject_url

pytestmark = pytest.mark.django_db

SUBJECT = "FF-0003"
CARD = "4111 1111 1111 1111"
EMAIL = "jane.traveller@example.com"


@pytest.fixture
def seeded():
    FactFactory(subject_id=SUBJECT, key="seat_preference", value="Prefers aisle seats")
    return db_state()


def _error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "fields"}
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    return body["error"]


def _put_raw(agent, url: str, raw: bytes | str):
    return agent.generic("PUT", url, data=raw, content_type="application/json")


@pytest.mark.parametrize("raw", [b"{", b"", b"\xff\xfe{}", b'{"facts": [}', b"nul\x00"])
def test_malformed_json_is_400_malformed_json(agent, seeded, raw):
    if raw == b"":
        response = _put_raw(agent, facts_url(SUBJECT), raw)
        error = _error(response, 400, "invalid")  # no body at all: "facts" is required
        assert "facts" in error["fields"]
    else:
        error = _error(_put_raw(agent, facts_url(SUBJECT), raw), 400, "malformed_json")
        assert error["fields"] == {}
    assert db_state() == seeded


def test_non_json_content_type_is_415(agent, seeded):
    response = agent.generic(
        "PUT", facts_url(SUBJECT), data="facts=1", content_type="application/x-www-form-urlencoded"
    )

    _error(response, 415, "unsupported_media_type")
    assert db_state() == seeded


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([{"key": "a", "value": "b"}], "body"),
        ({"facts": "seat_preference=aisle"}, "facts"),
        ({"facts": [{"key": "seat", "value": 42}]}, "facts[0].value"),
        ({"facts": [{"key": 7, "value": "Aisle"}]}, "facts[0].key"),
        ({"facts": [{"key": "seat", "value": ["Aisle"]}]}, "facts[0].value"),
        ({"facts": [{"key": "seat", "value": None}]}, "facts[0].value"),
        ({"facts": [{"key": "seat", "value": "Aisle", "category": 5}]}, "facts[0].category"),
        ({"facts": ["seat=aisle"]}, "facts[0]"),
        ({"facts": [{"key": "seat", "value": "Aisle"}], "session_id": 12}, "session_id"),
        ({"facts": [{"key": "seat"}]}, "facts[0].value"),
        ({}, "facts"),
    ],
)
def test_wrong_types_are_400_with_field_messages(agent, seeded, body, field):
    error = _error(agent.put(facts_url(SUBJECT), body, format="json"), 400, "invalid")

    assert field in error["fields"]
    assert db_state() == seeded


def test_more_than_50_facts_is_refused_whole(agent, seeded):
    facts = [{"key": f"topic_{n}", "value": f"Fact {n}"} for n in range(51)]

    error = _error(agent.put(facts_url(SUBJECT), {"facts": facts}, format="json"), 400, "invalid")

    assert "facts" in error["fields"]
    assert "50" in error["fields"]["facts"]
    assert db_state() == seeded


def test_exactly_50_facts_is_fine(agent, seeded):
    facts = [{"key": f"topic_{n}", "value": f"Fact {n}"} for n in range(50)]

    response = agent.put(facts_url(SUBJECT), {"facts": facts}, format="json")

    assert response.status_code == 200
    assert len(response.json()["facts"]) == 51


@pytest.mark.parametrize(
    ("fact", "field"),
    [
        ({"key": "k" * 65, "value": "Aisle"}, "facts[1].key"),
        ({"key": "seat", "value": "v" * 201}, "facts[1].value"),
        ({"key": "", "value": "Aisle"}, "facts[1].key"),
        ({"key": "!!!", "value": "Aisle"}, "facts[1].key"),
        ({"key": "seat", "value": "   "}, "facts[1].value"),
        ({"key": "seat", "value": "Aisle", "category": "wish"}, "facts[1].category"),
        ({"key": "seat", "value": "Ais\x00le"}, "facts[1].value"),
        ({"key": "se\x00at", "value": "Aisle"}, "facts[1].key"),
    ],
)
def test_one_bad_fact_refuses_the_whole_batch(agent, seeded, fact, field):
    body = {"facts": [{"key": "meal", "value": "Vegetarian"}, fact]}

    error = _error(agent.put(facts_url(SUBJECT), body, format="json"), 400, "invalid")

    assert field in error["fields"]
    assert db_state() == seeded


def test_limits_are_enforced_not_clamped_on_the_single_fact_endpoint(agent, seeded):
    too_long_value = _error(
        agent.put(facts_url(SUBJECT, "seat"), {"value": "v" * 201}, format="json"), 400, "invalid"
    )
    too_long_key = _error(
        agent.put(facts_url(SUBJECT, "k" * 65), {"value": "Aisle"}, format="json"), 400, "invalid"
    )

    assert "value" in too_long_value["fields"]
    assert "key" in too_long_key["fields"]
    assert db_state() == seeded


def test_unknown_category_message_lists_the_choices_without_echoing(agent, seeded):
    error = _error(
        agent.put(
            facts_url(SUBJECT, "seat"), {"value": "Aisle", "category": "<b>wish</b>"}, format="json"
        ),
        400,
        "invalid",
    )

    assert "constraint, context, preference" in error["fields"]["category"]
    assert "wish" not in json.dumps(error)
    assert db_state() == seeded


@pytest.mark.parametrize(
    "url",
    [
        facts_url("x" * 129),
        facts_url("x" * 129, "seat"),
        facts_url("x" * 129, "search"),
        subject_url("x" * 129, "tier-one"),
        subject_url("x" * 129, "purge-generation"),
    ],
)
def test_subject_id_of_129_characters_is_400_on_reads(agent, url):
    error = _error(agent.get(url), 400, "invalid")

    assert "subject_id" in error["fields"]


@pytest.mark.parametrize(
    ("method", "url", "body"),
    [
        ("put", facts_url("x" * 129), {"facts": [{"key": "seat", "value": "Aisle"}]}),
        ("put", facts_url("x" * 129, "seat"), {"value": "Aisle"}),
        ("delete", facts_url("x" * 129, "seat"), None),
        ("post", subject_url("x" * 129, "clear"), None),
        ("put", facts_url("bad id"), {"facts": [{"key": "seat", "value": "Aisle"}]}),
        ("put", facts_url("nul\x00id", "seat"), {"value": "Aisle"}),
        ("post", subject_url("tab\tid", "clear"), None),
    ],
)
def test_bad_subject_ids_are_400_on_writes_and_nothing_is_written(agent, seeded, method, url, body):
    kwargs = {"format": "json"} if body is not None else {}
    response = getattr(agent, method)(url, body, **kwargs)

    error = _error(response, 400, "invalid")
    assert "subject_id" in error["fields"]
    assert db_state() == seeded


@pytest.mark.parametrize(
    ("method", "url", "body", "field"),
    [
        ("get", facts_url(SUBJECT, "se\x00at"), None, "key"),
        ("delete", facts_url(SUBJECT, "se\x00at"), None, "key"),
        ("put", facts_url(SUBJECT, "seat"), {"value": "Aisle\x00"}, "value"),
        (
            "put",
            facts_url(SUBJECT, "seat"),
            {"value": "Aisle", "session_id": "s\x00"},
            "session_id",
        ),
        ("get", facts_url(SUBJECT, "search") + "?q=ai%00sle", None, "q"),
    ],
)
def test_nul_bytes_are_refused_with_a_field_message(agent, seeded, method, url, body, field):
    kwargs = {"format": "json"} if body is not None else {}
    response = getattr(agent, method)(url, body, **kwargs)

    error = _error(response, 400, "invalid")
    assert field in error["fields"]
    assert db_state() == seeded


@pytest.mark.parametrize(
    "url",
    [
        facts_url(SUBJECT, "search") + "?query=aisle",
        facts_url(SUBJECT) + "?page=2",
        subject_url(SUBJECT, "tier-one") + "?cap=100",
    ],
)
def test_unknown_query_parameters_are_400_not_ignored(agent, url):
    error = _error(agent.get(url), 400, "invalid")

    assert set(error["fields"]) == {url.rsplit("?", 1)[1].split("=")[0]}


def test_search_query_over_100_characters_is_400(agent, seeded):
    error = _error(agent.get(facts_url(SUBJECT, "search"), {"q": "a" * 101}), 400, "invalid")

    assert "q" in error["fields"]


@pytest.mark.parametrize(
    ("value", "digits"),
    [
        (f"Card {CARD}", "4111"),
        (f"Email me at {EMAIL}", "jane.traveller"),
        ("Call +1 415 555 0100 after six", "555"),
    ],
)
def test_blocked_values_are_422_and_never_echoed(agent, seeded, value, digits):
    bulk = agent.put(
        facts_url(SUBJECT),
        {"facts": [{"key": "meal", "value": "Vegetarian"}, {"key": "contact", "value": value}]},
        format="json",
    )
    single = agent.put(facts_url(SUBJECT, "contact"), {"value": value}, format="json")

    bulk_error = _error(bulk, 422, "blocked_by_filter")
    single_error = _error(single, 422, "blocked_by_filter")
    assert "facts[1].value" in bulk_error["fields"]
    assert "value" in single_error["fields"]
    for response in (bulk, single):
        assert digits not in response.content.decode()
    assert db_state() == seeded


def test_privacy_team_patterns_are_enforced(agent, seeded):
    MemorySettings.objects.update_or_create(pk=1, defaults={"blocked_patterns": [r"\bPNR\b"]})

    response = agent.put(facts_url(SUBJECT, "booking"), {"value": "PNR is ABC123"}, format="json")

    _error(response, 422, "blocked_by_filter")
    assert "ABC123" not in response.content.decode()
    assert db_state() == seeded


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/nothing-here",
        "/api/v1/subjects/x/facts/a/b",
        "/api/v1/subjects/x",
        "/api/v1/subjects/x/facts/search/more",
        "/api/v1/",
    ],
)
def test_unknown_api_urls_are_json_404(agent, url):
    _error(agent.get(url), 404, "not_found")


def test_unknown_api_urls_are_json_404_without_a_token_too(client):
    response = client.get("/api/v1/nothing-here")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("patch", facts_url(SUBJECT, "seat")),
        ("post", facts_url(SUBJECT)),
        ("delete", facts_url(SUBJECT, "search")),
        ("get", subject_url(SUBJECT, "clear")),
        ("options", facts_url(SUBJECT)),
    ],
)
def test_wrong_method_is_405_in_the_error_shape(agent, seeded, method, url):
    _error(getattr(agent, method)(url), 405, "method_not_allowed")
    assert db_state() == seeded


def test_unexpected_errors_are_500_in_the_error_shape_without_details():
    response = api_exception_handler(RuntimeError("secret internals: 4111 1111"), {})

    assert response.status_code == 500
    assert response.data["error"]["code"] == "server_error"
    assert "4111" not in str(response.data)


def test_api_error_and_error_response_share_the_shape():
    raised = api_exception_handler(
        ApiError(
            status_code=409,
            code="job_running",
            message="Still running.",
            fields={"job_id": "Busy."},
            headers={"Retry-After": "5"},
        ),
        {},
    )
    returned = error_response(
        status=409, code="job_running", message="Still running.", fields={"job_id": "Busy."}
    )

    assert raised.status_code == returned.status_code == 409
    assert (
        raised.data
        == returned.data
        == {
            "error": {
                "code": "job_running",
                "message": "Still running.",
                "fields": {"job_id": "Busy."},
            }
        }
    )
    assert raised["Retry-After"] == "5"


def test_nested_validation_errors_flatten_to_dotted_field_names():
    detail = {
        "facts": {0: {"key": ["Too long.", "Bad."]}, 2: {"non_field_errors": ["Not an object."]}},
        "non_field_errors": ["Wrong."],
        "session_id": ["Must be text."],
    }

    assert flatten_errors(detail) == {
        "facts[0].key": "Too long. Bad.",
        "facts[2]": "Not an object.",
        "body": "Wrong.",
        "session_id": "Must be text.",
    }


def test_head_is_answered_like_get(agent, seeded):
    response = agent.head(facts_url(SUBJECT))

    assert response.status_code == 200


@pytest.mark.django_db
def test_a_body_over_the_size_limit_is_413_not_500(make_agent, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    agent = make_agent()
    big = {"facts": [{"key": f"k{n}", "value": "x" * 150} for n in range(20)]}
    response = agent.put("/api/v1/subjects/T-big/facts", big, format="json")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"
