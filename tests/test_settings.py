"""Production settings: the documented environment passes `check --deploy`, and the public
development key is refused whenever DEBUG is off. Each case runs in a fresh interpreter, since
settings are read once at start-up."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION_ENV = ROOT / "production.env.example"


def production_env() -> dict[str, str]:
    pairs = (
        line.split("=", 1)
        for line in PRODUCTION_ENV.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    )
    return {name.strip(): value.strip() for name, value in pairs}


def run_django(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ.get("PATH", ""), "DJANGO_SETTINGS_MODULE": "memoryadmin.settings"}
    return subprocess.run(  # noqa: S603 - fixed argv
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_reports_nothing_with_the_documented_production_environment():
    result = run_django(production_env(), "check", "--deploy", "--fail-level", "WARNING")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.parametrize(
    "secret_env",
    [{}, {"SECRET_KEY": ""}, {"SECRET_KEY": "dev-only-insecure-key-change-me"}],
    ids=["unset", "empty", "the-dev-key"],
)
def test_the_development_key_is_refused_when_debug_is_off(secret_env):
    env = {**production_env(), **secret_env}
    env.pop("SECRET_KEY") if "SECRET_KEY" not in secret_env else None

    result = run_django({**env, "DEBUG": "false"}, "check")

    assert result.returncode != 0
    assert "Set SECRET_KEY" in result.stderr


def test_the_development_key_is_allowed_with_debug_on():
    result = run_django({"DEBUG": "true"}, "check")

    assert result.returncode == 0, result.stderr


def test_a_real_key_with_debug_off_starts():
    result = run_django({"DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(50)}, "check")

    assert result.returncode == 0, result.stderr


def test_the_proxy_ssl_header_and_hsts_come_from_the_environment():
    code = (
        "from django.conf import settings as s;"
        "print(s.SECURE_PROXY_SSL_HEADER, s.SECURE_HSTS_SECONDS, s.SECURE_SSL_REDIRECT,"
        " s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE)"
    )
    base = {"PATH": os.environ.get("PATH", ""), "DJANGO_SETTINGS_MODULE": "memoryadmin.settings"}

    on = subprocess.run(  # noqa: S603 - fixed argv
        [sys.executable, "-c", "import django; django.setup();" + code],
        cwd=ROOT,
        env={**base, **production_env()},
        capture_output=True,
        text=True,
        check=True,
    )
    off = subprocess.run(  # noqa: S603 - fixed argv
        [sys.executable, "-c", "import django; django.setup();" + code],
        cwd=ROOT,
        env={**base, "DEBUG": "true"},
        capture_output=True,
        text=True,
        check=True,
    )

    assert on.stdout.split() == [
        "('HTTP_X_FORWARDED_PROTO',",
        "'https')",
        "31536000",
        "True",
        "True",
        "True",
    ]
    assert off.stdout.split() == ["None", "0", "False", "False", "False"]


def test_a_missing_setting_is_one_line_naming_it_not_a_traceback():
    result = run_django({**production_env(), "SECRET_KEY": "", "DEBUG": "false"}, "check")

    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert "Set SECRET_KEY" in result.stderr
