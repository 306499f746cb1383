"""The schema and docs views under /api/v1/ (drf-spectacular's, with their YAML, OpenAPI-JSON and
HTML renderers) answer every error in the JSON error shape, whatever `Accept` header or
`?format=` value a client or a scanner sends: never a YAML or HTML error page, never a 5xx.
A successful download of the schema and the docs pages stay as they were."""

from __future__ import annotations

import json

import pytest
import yaml

pytestmark = pytest.mark.django_db

VIEWS = ["/api/v1/schema/", "/api/v1/docs/", "/api/v1/docs/?script=", "/api/v1/redoc/"]
ACCEPTS = [
    None,
    "*/*",
    "application/json",
    "application/vnd.oai.openapi",
    "application/vnd.oai.openapi+json",
    "application/yaml",
    "text/html",
    "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",  # a browser's
    "application/xml",
    "text/plain",
    "application/json; version=2",
    "garbage",
    "*/*;q=nonsense, ;;;",
]
FORMATS = [None, "yaml", "json", "html", "api", "openapi", "openapi-json", "xml", "zzz", ""]


def _url(view: str, fmt: str | None) -> str:
    if fmt is None:
        return view
    return f"{view}{'&' if '?' in view else '?'}format={fmt}"


@pytest.mark.parametrize("view", VIEWS)
def test_every_error_of_the_schema_and_docs_views_is_json(client, view):
    seen_errors = 0
    for accept in ACCEPTS:
        for fmt in FORMATS:
            extra = {"HTTP_ACCEPT": accept} if accept is not None else {}
            response = client.get(_url(view, fmt), **extra)
            where = f"{view} Accept={accept!r} format={fmt!r}"
            assert response.status_code < 500, where
            if response.status_code < 400:
                continue
            seen_errors += 1
            assert response["Content-Type"].startswith("application/json"), where
            body = json.loads(response.content)
            assert set(body) == {"error"}, where
            assert set(body["error"]) == {"code", "message", "fields"}, where
            assert body["error"]["code"] in {"not_found", "not_acceptable"}, where
    assert seen_errors  # the matrix does reach the error paths of every view


@pytest.mark.parametrize(
    ("url", "accept", "status", "code"),
    [
        ("/api/v1/schema/", "text/html", 406, "not_acceptable"),
        ("/api/v1/schema/?format=html", None, 404, "not_found"),
        ("/api/v1/schema/?format=yaml", "application/json", 406, "not_acceptable"),
        ("/api/v1/docs/?format=json", None, 404, "not_found"),
        ("/api/v1/docs/", "application/xml", 406, "not_acceptable"),
        ("/api/v1/redoc/?format=zzz", "text/html", 404, "not_found"),
    ],
)
def test_the_cases_that_gave_yaml_or_html_error_pages(client, url, accept, status, code):
    extra = {"HTTP_ACCEPT": accept} if accept else {}
    response = client.get(url, **extra)
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == code


def test_the_schema_download_is_unchanged(client):
    default = client.get("/api/v1/schema/")
    assert default.status_code == 200
    assert default["Content-Type"].startswith("application/vnd.oai.openapi")
    assert yaml.safe_load(default.content)["openapi"].startswith("3.")
    as_json = client.get("/api/v1/schema/?format=json")
    assert as_json.status_code == 200
    assert json.loads(as_json.content)["info"]["title"] == "memoryadmin agent API"
    asked = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json")
    assert asked.status_code == 200 and "paths" in json.loads(asked.content)
    docs = client.get("/api/v1/docs/", HTTP_ACCEPT="text/html")
    assert docs.status_code == 200 and docs["Content-Type"].startswith("text/html")
    script = client.get("/api/v1/docs/?script=")
    assert script.status_code == 200 and "javascript" in script["Content-Type"]
