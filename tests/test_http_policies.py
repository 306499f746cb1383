"""What every page and answer carries: a Content-Security-Policy without inline script or other
origins, no-store caching for anything with personal data, a Referrer-Policy; a NUL byte in a
search is harmless; request errors are logged with DEBUG off."""

from __future__ import annotations

import io
import logging

import pytest
from django.http import HttpRequest
from django.test import Client
from django.urls import path

from memoryadmin.staff.roles import VIEWER
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _boom(request: HttpRequest):
    raise RuntimeError("boom for the log test")


urlpatterns = [path("boom/", _boom)]


@pytest.fixture
def viewer_client(client):
    from django.contrib.auth.models import Group

    user = UserFactory(username="policy-viewer")
    user.groups.add(Group.objects.get_or_create(name=VIEWER)[0])
    client.force_login(user)
    return client


def _csp(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    directives = [part.strip().split() for part in header.split(";") if part.strip()]
    return {name: values for name, *values in directives}


@pytest.mark.parametrize("url", ["/login/", "/staff/", "/api/v1/docs/", "/api/v1/nothing"])
def test_every_page_has_a_strict_content_security_policy(viewer_client, url):
    response = viewer_client.get(url)
    csp = _csp(response)

    assert csp["default-src"] == ["'self'"]
    assert csp["script-src"] == ["'self'"]  # no inline script, no other origin
    assert csp["style-src"] == ["'self'"]
    assert csp["frame-ancestors"] == ["'none'"]
    assert not any("http" in value for values in csp.values() for value in values)


@pytest.mark.parametrize("url", ["/login/", "/staff/", "/api/v1/subjects/FF-1/tier-one"])
def test_the_site_policy_header_is_the_one_django_csp_builds(
    viewer_client, agent_for_policies, url, settings
):
    """The header (django-csp's own middleware) must say what django-csp would say, and follow
    the setting when it changes."""
    from csp.utils import build_policy

    client = agent_for_policies if url.startswith("/api/") else viewer_client
    assert _csp(client.get(url)) == _csp({"Content-Security-Policy": build_policy()})

    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"default-src": ["'none'"]}}
    changed = _csp(client.get(url))
    assert changed["default-src"] == ["'none'"]
    assert changed == _csp({"Content-Security-Policy": build_policy()})


def test_only_the_redoc_page_allows_inline_styles_and_never_inline_scripts(client):
    csp = _csp(client.get("/api/v1/redoc/"))

    assert "'unsafe-inline'" in csp["style-src"]
    assert csp["script-src"] == ["'self'"]


@pytest.mark.parametrize("url", ["/login/", "/staff/", "/api/v1/nothing"])
def test_pages_are_not_stored_by_browsers_or_proxies(viewer_client, url):
    response = viewer_client.get(url)

    assert "no-store" in response["Cache-Control"]
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_api_answers_are_not_stored_either(agent_for_policies):
    response = agent_for_policies.get("/api/v1/subjects/FF-1/facts")

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]


@pytest.mark.parametrize("tail", ["tier-one", "facts", "facts/search?q=aisle", "nothing"])
def test_agent_answers_carry_every_response_policy_and_no_session(agent_for_policies, tail):
    """The API skips the browser-only middleware (sessions, staff user, messages), never the
    response policies; the hot reads answer outside DRF's machinery, with the same headers."""
    from django.http import HttpResponse
    from django.utils.cache import add_never_cache_headers

    never_cached = HttpResponse()
    add_never_cache_headers(never_cached)
    response = agent_for_policies.get(f"/api/v1/subjects/FF-1/{tail}")

    assert response.status_code == (404 if tail == "nothing" else 200)
    assert response["Cache-Control"] == never_cached["Cache-Control"]
    assert response.has_header("Expires")
    assert _csp(response)["default-src"] == ["'self'"]
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert not response.cookies
    assert "Cookie" not in response.get("Vary", "")


def test_staff_pages_keep_sessions_and_csrf(client):
    """What the API skips still runs for every page a browser uses."""
    from django.test import Client

    page = client.get("/login/")
    strict = Client(enforce_csrf_checks=True)
    refused = strict.post("/login/", {"username": "x", "password": "y"})

    assert page.status_code == 200
    assert "csrftoken" in page.cookies
    assert "Cookie" in page["Vary"]
    assert refused.status_code == 403


@pytest.fixture
def agent_for_policies(db):
    from rest_framework.test import APIClient

    from memoryadmin.api.tokens import token_issue

    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION="Bearer " + token_issue(name="p", scopes=["memory:read"])[1]
    )
    return client


@pytest.mark.parametrize("query", ["%00", "FF%00-1", "a%00b%00"])
def test_a_nul_byte_in_the_staff_search_answers_normally(viewer_client, query):
    response = viewer_client.get("/staff/travellers/?q=" + query)

    assert response.status_code == 200


def _stream_handlers(name: str) -> list[logging.StreamHandler]:
    """The stream handlers a record of logger `name` reaches, as logging itself walks them."""
    found: list[logging.StreamHandler] = []
    logger: logging.Logger | None = logging.getLogger(name)
    while logger is not None:
        found += [h for h in logger.handlers if isinstance(h, logging.StreamHandler)]
        logger = logger.parent if logger.propagate else None
    return found


@pytest.mark.urls(__name__)
def test_request_errors_are_logged_with_debug_off(settings):
    """Through the handlers the settings configure (where the process's stderr goes)."""
    settings.DEBUG = False
    client = Client(raise_request_exception=False)
    handlers = _stream_handlers("django.request")
    streams = [io.StringIO() for _ in handlers]
    saved = [handler.setStream(stream) for handler, stream in zip(handlers, streams, strict=True)]
    try:
        response = client.get("/boom/")
    finally:
        for handler, stream in zip(handlers, saved, strict=True):
            handler.setStream(stream)

    written = "".join(stream.getvalue() for stream in streams)
    assert response.status_code == 500
    assert "ERROR django.request Internal Server Error: /boom/" in written
    assert "RuntimeError: boom for the log test" in written


@pytest.mark.django_db
def test_plain_http_to_the_api_is_a_json_403_never_a_redirect(client, settings):
    """A 301 makes clients re-send a PUT as a GET: the write would be lost (issue 19)."""
    settings.SECURE_SSL_REDIRECT = True
    response = client.put(
        "/api/v1/subjects/FF-1/facts/seat",
        data='{"value": "Aisle"}',
        content_type="application/json",
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "https_required"
    assert client.get("/staff/").status_code == 301  # pages still go to HTTPS
    secure = client.get("/api/v1/subjects/FF-1/facts", secure=True)
    assert secure.status_code == 401  # over HTTPS it reaches the API (no token here)


def test_the_proxy_header_is_trusted_only_behind_a_declared_tls_proxy():
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.SECURE_PROXY_SSL_HEADER)"
    )
    base = {
        "PATH": os.environ.get("PATH", ""),
        "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
        "DEBUG": "true",
        "DATABASE_URL": os.environ["DATABASE_URL"],
        "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
    }
    root = Path(__file__).resolve().parent.parent

    def header(**extra: str) -> str:
        return subprocess.run(
            [sys.executable, "-c", code],
            cwd=root,
            env={**base, **extra},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    assert header() == "None"
    assert header(BEHIND_TLS_PROXY="true") == "('HTTP_X_FORWARDED_PROTO', 'https')"
