"""The served OpenAPI schema documents every endpoint (auth, bodies, errors), the docs pages
render, and schemathesis, driving every operation with a valid all-scopes token, finds no 5xx
and no response that contradicts the schema."""

from __future__ import annotations

import html
import re

import pytest
import schemathesis
from django.core import signals
from django.core.management import call_command
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from schemathesis import GenerationMode, checks

import tests.support.hypothesis_home  # noqa: F401 - before any Hypothesis test runs
from memoryadmin.api.models import Scope
from memoryadmin.api.tokens import token_issue
from tests.factories import FactFactory

OWN_OPERATIONS = {
    ("GET", "/api/v1/subjects/{subject_id}/facts"),
    ("PUT", "/api/v1/subjects/{subject_id}/facts"),
    ("GET", "/api/v1/subjects/{subject_id}/facts/{key}"),
    ("PUT", "/api/v1/subjects/{subject_id}/facts/{key}"),
    ("DELETE", "/api/v1/subjects/{subject_id}/facts/{key}"),
    ("GET", "/api/v1/subjects/{subject_id}/facts/search"),
    ("GET", "/api/v1/subjects/{subject_id}/tier-one"),
    ("POST", "/api/v1/subjects/{subject_id}/clear"),
    ("GET", "/api/v1/subjects/{subject_id}/purge-generation"),
    ("GET", "/api/v1/memory"),
}
TURN_OPERATIONS = {
    ("POST", "/api/v1/subjects/{subject_id}/turns"),
    ("GET", "/api/v1/jobs/{job_id}"),
}
PORTAL_OPERATIONS = {("POST", "/api/v1/subjects/{subject_id}/portal-links")}
USAGE_OPERATIONS = {("POST", "/api/v1/subjects/{subject_id}/usage")}

schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", get_wsgi_application())
schema.config.generation.update(
    max_examples=30,
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
    database="none",  # no example database written into the working tree
    with_security_parameters=False,  # the test sends a valid token itself
)


@pytest.fixture
def served_schema(client) -> dict:
    response = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return response.json()


@pytest.mark.django_db
def test_schema_lists_every_endpoint_with_bearer_auth_and_the_error_shape(served_schema):
    operations = {
        (method.upper(), path)
        for path, item in served_schema["paths"].items()
        for method in item
        if method in {"get", "put", "post", "delete", "patch"}
    }
    assert operations == OWN_OPERATIONS | TURN_OPERATIONS | PORTAL_OPERATIONS | USAGE_OPERATIONS
    bearer = served_schema["components"]["securitySchemes"]["serviceToken"]
    assert (bearer["type"], bearer["scheme"]) == ("http", "bearer")
    assert "memory:read" in bearer["description"]
    error = served_schema["components"]["schemas"]["ErrorDetail"]
    assert set(error["properties"]) == {"code", "message", "fields"}
    fact = served_schema["components"]["schemas"]["WireFact"]
    assert set(fact["properties"]) == {
        "key",
        "value",
        "category",
        "updated_at",
        "source_session_id",
        "version",
    }
    for method, path in OWN_OPERATIONS:
        operation = served_schema["paths"][path][method.lower()]
        assert operation["security"] == [{"serviceToken": []}]
        assert "Requires a service token with scope" in operation["description"]
        for status in ("400", "401", "403", "429"):
            ref = operation["responses"][status]["content"]["application/json"]["schema"]
            assert ref == {"$ref": "#/components/schemas/Error"}
        if method in {"PUT", "POST"}:
            assert "requestBody" in operation or path.endswith("/clear")
        if method != "GET":
            names = {p["name"] for p in operation["parameters"]}
            assert "Idempotency-Key" in names
    usage = served_schema["paths"]["/api/v1/subjects/{subject_id}/usage"]["post"]
    assert "memory:read" in usage["description"] and "requestBody" in usage
    for status in ("400", "401", "403", "429"):
        ref = usage["responses"][status]["content"]["application/json"]["schema"]
        assert ref == {"$ref": "#/components/schemas/Error"}
    portal = served_schema["paths"]["/api/v1/subjects/{subject_id}/portal-links"]["post"]
    assert "portal:issue" in portal["description"]
    assert set(portal["responses"]["201"]["content"]["application/json"]["schema"].values()) == {
        "#/components/schemas/PortalLink"
    }


def test_schema_is_valid_openapi_and_generates_without_warnings(tmp_path):
    target = tmp_path / "schema.yaml"

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))

    assert target.read_text().startswith("openapi: 3.")


@pytest.mark.django_db
def test_redoc_renders_without_a_token(client):
    response = client.get("/api/v1/redoc/")

    assert response.status_code == 200
    assert b"/api/v1/schema/" in response.content


@pytest.mark.django_db
def test_swagger_loads_its_setup_from_a_script_file_not_an_inline_script(client):
    """The Content-Security-Policy forbids inline scripts: the page names the setup script by
    URL, and that script points Swagger UI at the schema."""
    page = client.get("/api/v1/docs/")
    body = page.content.decode()
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", body, re.S)
    setup = re.search(r'<script src="([^"]*\?script=?)"', body)

    assert page.status_code == 200
    assert scripts and all('src="' in attrs and not inner.strip() for attrs, inner in scripts)
    assert setup is not None
    script = client.get(html.unescape(setup.group(1)))
    assert script.status_code == 200
    assert b"/api/v1/schema/" in script.content


@pytest.fixture
def keep_test_connection():
    """The real WSGI handler closes the database connection after each request; in a test that
    would close the connection holding the test transaction. Django's own test client does the
    same disconnect."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def all_scopes_secret(db, settings, keep_test_connection) -> str:
    settings.API_THROTTLE_RATE = "100000/min"
    FactFactory(subject_id="FF-0006", key="seat_preference", value="Prefers aisle seats")
    return token_issue(name="schemathesis", scopes=Scope.values)[1]


@schema.parametrize()
@hypothesis_settings(
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_every_operation_conforms_and_never_5xx(case, all_scopes_secret):
    conformance = [
        checks.not_a_server_error,
        checks.status_code_conformance,
        checks.content_type_conformance,
        checks.response_headers_conformance,
        checks.response_schema_conformance,
        checks.negative_data_rejection,  # every schema-violating request must be refused
    ]
    case.call_and_validate(
        headers={"Authorization": f"Bearer {all_scopes_secret}"}, checks=conformance
    )


@pytest.mark.django_db
def test_the_docs_page_loads_its_ui_from_our_own_static_files(client):
    """No CDN: the docs must work on a machine without internet access."""
    body = client.get("/api/v1/docs/").content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in body
    assert "cdn.jsdelivr" not in body and "unpkg" not in body
