"""What `make serve`'s access log may contain: paths without query strings or the Referer, no
portal link secret, and a fact's key only as its keyed hash; the last test reads the log of a real
gunicorn."""

from __future__ import annotations

import re
import runpy
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from memoryadmin.accesslog import RedactingLogger, redact_path

ROOT = Path(__file__).resolve().parent.parent


def test_the_access_log_format_has_no_query_string_or_referer():
    config = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    fmt = config["access_log_format"]

    assert "%(U)s" in fmt  # the path alone
    for atom in ("%(r)s", "%(q)s", "%(f)s", "%({"):
        assert atom not in fmt
    assert config["logger_class"] == "memoryadmin.accesslog.RedactingLogger"


def test_a_portal_link_secret_is_cut_out_of_the_logged_path():
    assert redact_path("/portal/open/pl_s3cr3t-value") == "/portal/open/[redacted]"
    assert redact_path("/api/v1/subjects/FF-1/facts") == "/api/v1/subjects/FF-1/facts"


def test_the_logger_applies_the_redaction_to_what_it_writes():
    from gunicorn.config import Config

    logger = RedactingLogger(Config())
    request = SimpleNamespace(
        headers=[],
        method="GET",
        uri="/portal/open/pl_secret?x=1",
        query="x=1",
        path="/portal/open/pl_secret",
        version=(1, 1),
    )
    response = SimpleNamespace(status="302 Found", response_length=0, sent=0, headers=[])
    environ = {
        "REMOTE_ADDR": "127.0.0.1",
        "RAW_URI": "/portal/open/pl_secret?x=1",
        "PATH_INFO": "/portal/open/pl_secret",
        "QUERY_STRING": "x=1",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REQUEST_METHOD": "GET",
    }
    import datetime

    atoms = logger.atoms(response, request, environ, datetime.timedelta(seconds=0.01))

    assert atoms["U"] == "/portal/open/[redacted]"


def test_a_fact_key_in_an_agent_api_path_is_logged_as_its_keyed_hash(settings):
    from memoryadmin.facts.keyhash import key_digest

    logged = redact_path("/api/v1/subjects/FF-1/facts/wheelchair_assistance")
    assert "wheelchair" not in logged
    assert logged == "/api/v1/subjects/FF-1/facts/" + key_digest("FF-1", "wheelchair_assistance")
    assert redact_path("/api/v1/subjects/FF-1/facts/search") == "/api/v1/subjects/FF-1/facts/search"
    assert redact_path("/api/v1/subjects/FF-1/facts") == "/api/v1/subjects/FF-1/facts"


@pytest.mark.parametrize(
    "suffix", ["/", "/edit/", "/expiry/", "/reveal/", "/review/", "/delete/", "/flag/"]
)
def test_a_fact_key_in_a_staff_path_is_logged_as_its_keyed_hash(settings, suffix):
    from memoryadmin.facts.keyhash import key_digest

    logged = redact_path(f"/staff/travellers/FF-1/facts/wheelchair_assistance{suffix}")
    assert "wheelchair" not in logged
    digest = key_digest("FF-1", "wheelchair_assistance")
    assert logged == f"/staff/travellers/FF-1/facts/{digest}{suffix}"
    assert redact_path("/staff/travellers/FF-1/timeline/") == "/staff/travellers/FF-1/timeline/"


@pytest.mark.parametrize("suffix", ["/change", "/delete", ""])
def test_a_fact_key_in_a_portal_path_is_never_logged(suffix):
    logged = redact_path(f"/portal/facts/pregnancy_note{suffix}")
    assert logged == f"/portal/facts/[key]{suffix}"
    assert redact_path("/portal/looked") == "/portal/looked"


# --- the real thing: `make serve`'s gunicorn (gunicorn.conf.py), its access log as it writes it ---

SUBJECT = "FF-LOG19"
MARKER_KEY = "zqxmarkerkey"  # a topic: must never reach the log pipeline
MARKER_QUERY = "zqxquerymarker"


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_gunicorn_access_log_has_no_fact_key_link_secret_or_query_string():
    """GET, PUT and DELETE of /api/v1/subjects/<id>/facts/<key> with a real token, and a portal
    link opened and spent, through gunicorn as `make serve` runs it (the access log on its
    standard output, the default); then the log as written."""
    from memoryadmin.api.tokens import token_issue
    from memoryadmin.facts.keyhash import key_digest
    from memoryadmin.portal.services import portal_link_issue
    from tests.support.gunicorn import Gunicorn

    _, token = token_issue(name="access-log", scopes=["memory:read", "memory:write"])
    secret = portal_link_issue(subject_id=SUBJECT, issued_by="test").secret
    from tests.client.servers import free_port

    web = Gunicorn(port=free_port(), env={"GUNICORN_ACCESS_LOG": "-"}).start()
    try:
        fact = f"{web.url}/api/v1/subjects/{SUBJECT}/facts/{MARKER_KEY}"
        auth = {"Authorization": f"Bearer {token}"}
        with httpx.Client(headers=auth, timeout=30) as agent:
            put = agent.put(fact, json={"value": "Prefers aisle seats"})
            assert put.status_code in (200, 201), put.text
            assert agent.get(fact).status_code == 200
            search = agent.get(
                f"{web.url}/api/v1/subjects/{SUBJECT}/facts/search", params={"q": MARKER_QUERY}
            )  # a traveller's words, in a query
            assert search.status_code == 200, search.text
            assert agent.delete(fact).status_code in (200, 204)
            assert agent.get(fact).status_code == 404
        with httpx.Client(timeout=30) as traveller:
            page = traveller.get(f"{web.url}/portal/open/{secret}?utm={MARKER_QUERY}")
            assert page.status_code == 200
            csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
            assert csrf is not None
            spent = traveller.post(
                f"{web.url}/portal/open/{secret}", data={"csrfmiddlewaretoken": csrf.group(1)}
            )
            assert spent.status_code == 302, spent.text[:300]
            assert spent.headers["Location"] == "/portal/" and spent.cookies  # signed in
        with httpx.Client(timeout=30) as anyone:
            # Staff and portal pages of the fact: whatever they answer (a sign-in, a refusal),
            # their paths are in the log.
            staff_fact = f"{web.url}/staff/travellers/{SUBJECT}/facts/{MARKER_KEY}/"
            for path in ("", "edit/", "reveal/"):
                assert anyone.get(staff_fact + path).status_code < 500
            assert anyone.post(staff_fact + "edit/", data={"value": "x"}).status_code < 500
            for path in ("change", "delete"):
                portal_fact = f"{web.url}/portal/facts/{MARKER_KEY}/{path}"
                assert anyone.get(portal_fact).status_code < 500
                assert anyone.post(portal_fact, data={"value": "x"}).status_code < 500
        deadline = time.monotonic() + 10
        while "/portal/facts/[key]/delete" not in web.output() and time.monotonic() < deadline:
            time.sleep(0.1)  # the last access line is written after its answer
    finally:
        web.stop()
    log = web.output()
    access = [line for line in log.splitlines() if ' HTTP/1.1" ' in line]
    digest = key_digest(SUBJECT, MARKER_KEY)
    facts_lines = [
        line
        for line in access
        if f"/api/v1/subjects/{SUBJECT}/facts/" in line and "/search " not in line
    ]
    assert [line.split('"')[1].split()[0] for line in facts_lines] == [
        "PUT",
        "GET",
        "DELETE",
        "GET",
    ]
    assert all(f"/facts/{digest} " in line for line in facts_lines)
    assert sum("/facts/search " in line for line in access) == 1
    assert sum('"GET /portal/open/[redacted] ' in line for line in access) == 1
    assert sum('"POST /portal/open/[redacted] ' in line for line in access) == 1
    staff_lines = [line for line in access if f"/staff/travellers/{SUBJECT}/facts/" in line]
    assert len(staff_lines) == 4
    assert all(f"/facts/{digest}/" in line for line in staff_lines)
    portal_lines = [line for line in access if "/portal/facts/" in line]
    assert len(portal_lines) == 4
    assert all("/portal/facts/[key]/" in line for line in portal_lines)
    assert MARKER_KEY not in log
    assert secret not in log
    assert MARKER_QUERY not in log
    assert "?" not in "".join(line.split('"')[1] for line in access)
