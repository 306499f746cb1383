"""What `make serve`'s access log may contain: paths without query strings or the Referer, and no
portal link secret."""

from __future__ import annotations

import runpy
from pathlib import Path
from types import SimpleNamespace

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
        headers=[], method="GET", uri="/portal/open/pl_secret?x=1", query="x=1",
        path="/portal/open/pl_secret", version=(1, 1),
    )
    response = SimpleNamespace(status="302 Found", response_length=0, sent=0, headers=[])
    environ = {"REMOTE_ADDR": "127.0.0.1", "RAW_URI": "/portal/open/pl_secret?x=1",
               "PATH_INFO": "/portal/open/pl_secret", "QUERY_STRING": "x=1",
               "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": "GET"}
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
