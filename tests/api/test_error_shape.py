"""Whatever arrives under /api/ (any method, any address, any body) is answered in the JSON error
shape, never with a 500 or one of Django's HTML pages."""

from __future__ import annotations

import json

import pytest
from django.test import Client, RequestFactory

from memoryadmin.api import errors
from memoryadmin.facts.errors import FactInvalid
from memoryadmin.facts.validation import clean_subject_id

from .conftest import db_state, facts_url, subject_url

pytestmark = pytest.mark.django_db

SUBJECT = "FF-0011"
DEEP = ("[" * 1000 + "]" * 1000).encode()
DEEP_OBJECT = ('{"a":' * 1000 + "1" + "}" * 1000).encode()
TURN = {"session_id": "s-1", "turn_id": "t-1", "messages": [{"role": "user", "text": "hi"}]}


def _assert_error_shape(response, status: int) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    body = json.loads(response.content)
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "fields"}
    return body["error"]


@pytest.mark.parametrize("raw", [DEEP, DEEP_OBJECT], ids=["array", "object"])
@pytest.mark.parametrize(
    ("method", "url", "scopes"),
    [
        ("PUT", facts_url(SUBJECT), ("memory:write",)),
        ("PUT", facts_url(SUBJECT, "seat"), ("memory:write",)),
        ("POST", subject_url(SUBJECT, "turns"), ("turns:write",)),
    ],
)
def test_json_nested_a_thousand_levels_is_400_not_500(make_agent, method, url, scopes, raw):
    agent = make_agent(*scopes)
    before = db_state()

    response = agent.generic(method, url, data=raw, content_type="application/json")

    error = _assert_error_shape(response, 400)
    assert error["code"] == "malformed_json"
    assert db_state() == before


def test_nesting_within_the_limit_reaches_validation(agent):
    """A moderately nested body is parsed and refused by the serializer, with a field message."""
    body = b'{"value": ' + b"[" * 20 + b"]" * 20 + b"}"

    response = agent.generic(
        "PUT", facts_url(SUBJECT, "seat"), data=body, content_type="application/json"
    )

    assert _assert_error_shape(response, 400)["code"] == "invalid"


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
@pytest.mark.parametrize(
    "url", ["/api/v1/nothing-here", "/api/v1/subjects/x/facts/a/b", "/api/", "/api/v2/facts"]
)
def test_any_method_to_an_unknown_api_address_is_a_json_404(method, url):
    """With CSRF enforced as a browser would see it: no HTML CSRF page for POST/PUT/DELETE."""
    client = Client(enforce_csrf_checks=True)

    response = client.generic(method, url, data=b"{}", content_type="application/json")

    assert _assert_error_shape(response, 404)["code"] == "not_found"


def test_known_api_addresses_answer_json_to_every_method_without_a_token():
    client = Client(enforce_csrf_checks=True)
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
        for url in (facts_url(SUBJECT), subject_url(SUBJECT, "turns"), "/api/v1/jobs/1"):
            response = client.generic(method, url)
            assert response["Content-Type"].startswith("application/json"), (method, url)
            assert response.status_code in {401, 405}, (method, url, response.status_code)


def test_a_csrf_failure_under_api_is_json_and_elsewhere_the_usual_page():
    factory = RequestFactory()

    api = errors.api_csrf_failure(factory.post("/api/v1/anything"), reason="no token")
    page = errors.api_csrf_failure(factory.post("/login/"), reason="no token")

    assert _assert_error_shape(api, 403)["code"] == "forbidden"
    assert page.status_code == 403 and page["Content-Type"].startswith("text/html")


def test_errors_escaping_the_views_are_json_under_api():
    factory = RequestFactory()

    assert _assert_error_shape(errors.server_error(factory.get("/api/v1/x")), 500)
    assert _assert_error_shape(errors.page_not_found(factory.get("/api/x"), None), 404)
    assert errors.page_not_found(factory.get("/nowhere"), None)["Content-Type"].startswith(
        "text/html"
    )


@pytest.mark.parametrize("subject_id", [".", ".."])
def test_dot_subject_ids_are_refused(agent, make_agent, subject_id):
    """`.` and `..` cannot travel as one path segment: URL resolution drops or climbs them."""
    turns = make_agent("turns:write")
    before = db_state()

    with pytest.raises(FactInvalid):
        clean_subject_id(subject_id)
    responses = [
        agent.put(facts_url(subject_id, "seat"), {"value": "Aisle"}, format="json"),
        agent.put(
            facts_url(subject_id), {"facts": [{"key": "seat", "value": "Aisle"}]}, format="json"
        ),
        agent.get(facts_url(subject_id)),
        turns.post(subject_url(subject_id, "turns"), TURN, format="json"),
    ]

    for response in responses:
        assert "subject_id" in _assert_error_shape(response, 400)["fields"]
    assert db_state() == before


@pytest.mark.parametrize("subject_id", [".a", "a.", "...", "a..b"])
def test_ids_with_dots_that_are_not_dot_segments_stay_valid(subject_id):
    assert clean_subject_id(subject_id) == subject_id


def test_the_depth_limit_is_exact_for_objects_and_lists():
    """32 levels pass, 33 do not, whatever mix of objects and lists makes them."""
    from memoryadmin.api.parsers import MAX_JSON_DEPTH, _too_deep

    def nested(levels: int):
        value: object = "leaf"
        for n in range(levels):
            value = {"k": value, "x": 2} if n % 2 else [1, value, "y"]
        return value

    assert not _too_deep(nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH)
    assert _too_deep(nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH)
    assert not _too_deep("just a string", MAX_JSON_DEPTH)
    assert not _too_deep({"turns": [{"injected": [{"key": "k", "version": 1}]}]}, 5)
    assert _too_deep({"turns": [{"injected": [{"key": "k", "version": 1}]}]}, 4)
