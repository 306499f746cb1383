"""With no API key, a turn is skipped without loading the model SDK
(issue 23: the first turn took 4.4 s to answer `skipped`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys, django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from memoryadmin.api.models import Scope
from memoryadmin.api.tokens import token_issue
from django.test import Client
_, secret = token_issue(name="probe", scopes=[Scope.TURNS_WRITE.value])
response = Client().post(
    "/api/v1/subjects/FF-1/turns",
    {"session_id": "s", "turn_id": "t", "messages": [{"role": "user", "text": "hi"}]},
    content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}")
print(response.status_code, response.json()["status"], "anthropic" in sys.modules)
"""


@pytest.mark.django_db(transaction=True)  # the child commits its token and job; flushed after
def test_a_skipped_turn_never_imports_the_sdk(tmp_path):
    """The child runs on this worker's test database, already migrated (its `migrate` finds
    nothing to do): a scratch database migrated from nothing cost most of this test's time."""
    params = connection.settings_dict
    user = quote(params["USER"] or "", safe="")
    password = f":{quote(params['PASSWORD'], safe='')}" if params["PASSWORD"] else ""
    host = quote(params["HOST"] or "localhost", safe="")  # a socket folder, percent-encoded
    port = f":{params['PORT']}" if params["PORT"] else ""
    env = {
        "PATH": "/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
        "DEBUG": "true",
        "ANTHROPIC_API_KEY": "",
        "HOME": str(tmp_path),
        "DATABASE_URL": f"postgres://{user}{password}@{host}{port}/{params['NAME']}",
    }
    result = subprocess.run(  # noqa: S603 - fixed argv
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split()[-3:] == ["202", "skipped", "False"]
