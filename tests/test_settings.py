"""Production settings: the documented environment passes `check --deploy`, the public
development key is refused whenever DEBUG is off, every variable is read typed and a bad value
names its variable, and each setting has one default. Each case runs in a fresh interpreter,
since settings are read once at start-up."""

from __future__ import annotations

import ast
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from memoryadmin.conf.env import DATABASE_URL_MISSING, Env

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION_ENV = ROOT / "production.env.example"
# The database this test run uses (`make test` sets it): settings need one to start.
RUN_DATABASE_URL = os.environ["DATABASE_URL"]


def production_env() -> dict[str, str]:
    pairs = (
        line.split("=", 1)
        for line in PRODUCTION_ENV.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    )
    return {name.strip(): value.strip() for name, value in pairs}


def base_env() -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
        "DATABASE_URL": RUN_DATABASE_URL,
    }


def run_django(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - fixed argv
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base_env(), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_python(env: dict[str, str], code: str) -> subprocess.CompletedProcess[str]:
    """`code` after django.setup(), in a fresh interpreter with only `env` (and PATH) set."""
    return subprocess.run(  # noqa: S603 - fixed argv
        [sys.executable, "-c", "import django; django.setup();" + code],
        cwd=ROOT,
        env={**base_env(), **env},
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

    on = run_python(production_env(), code)
    off = run_python({"DEBUG": "true"}, code)

    assert on.returncode == 0, on.stderr
    assert off.returncode == 0, off.stderr

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


def test_without_database_url_settings_say_how_to_get_one_in_one_line():
    result = run_django({"DEBUG": "true", "DATABASE_URL": ""}, "check")

    assert result.returncode != 0
    assert result.stderr.strip() == f"manage.py: {DATABASE_URL_MISSING}"
    assert "Set DATABASE_URL (a PostgreSQL URL)" in DATABASE_URL_MISSING


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DB_CONN_MAX_AGE", "abc"),  # int
        ("SECURE_COOKIES", "ture"),  # bool: not silently False
        ("WEBHOOK_TIMEOUT_SECONDS", "10s"),  # float: not silently 10.0
        ("METRICS_GAUGE_REFRESH_SECONDS", "1.5"),  # int
        ("TIME_ZONE", "Mars/Olympus"),  # not a zone
        ("PRIVACY_TIME_ZONE", "Asia/Taipei"),  # retired: TIME_ZONE is the one zone
        ("LOG_FORMAT", "xml"),  # one of text, json
        ("CELERY_BROKER_URL", "redis-internal"),  # a URL
        ("DATABASE_URL", "nonsense"),  # a database URL
        ("DATABASE_URL", "postgres://u@db:port/memoryadmin"),
        ("FASTPATH_API_LEAN_GET", "maybe"),
    ],
)
def test_a_bad_value_is_an_error_that_names_its_variable(variable, value):
    result = run_python({"DEBUG": "true", variable: value}, "print('started')")

    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("django.core.exceptions.ImproperlyConfigured: " + variable), last


def test_a_database_url_with_a_password_is_not_repeated_in_its_error():
    result = run_django({"DEBUG": "true", "DATABASE_URL": "postgres://u:s3cret@db:x/m"}, "check")

    assert "DATABASE_URL" in result.stderr
    assert "s3cret" not in result.stderr


def test_a_libpq_multi_host_url_gives_hosts_ports_and_options():
    url = "postgresql://app:pw@h1:5432,h2:5433/memoryadmin?target_session_attrs=read-write"
    code = (
        "from django.conf import settings as s; d = s.DATABASES['default'];"
        "print(d['HOST'], d['PORT'], d['NAME'], d['OPTIONS'], d['CONN_MAX_AGE'])"
    )

    result = run_python({"DEBUG": "true", "DATABASE_URL": url, "DB_CONN_MAX_AGE": "0"}, code)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().split(maxsplit=3) == [
        "h1,h2",
        "5432,5433",
        "memoryadmin",
        "{'target_session_attrs': 'read-write'} 0",
    ]


def test_the_defaults_with_nothing_set():
    """One default per setting, in settings: the store's native async path is on unless turned
    off, and so is each fenced speed trick."""
    code = (
        "from django.conf import settings as s;"
        "print(s.MEMORY_STORE_NATIVE_ASYNC, s.FASTPATH_DJANGO_CURSOR,"
        " s.FASTPATH_API_LEAN_GET,"
        " s.DATABASES['default']['CONN_MAX_AGE'], s.CELERY_TASK_ALWAYS_EAGER,"
        " s.SECRET_KEY_FALLBACKS)"
    )

    result = run_python({"DEBUG": "true"}, code)

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True"] * 3 + ["60", "True", "[]"]


def test_beat_keeps_its_schedule_outside_the_source_tree():
    """Celery's own default is `celerybeat-schedule` in the working directory (the checkout)."""
    code = "from django.conf import settings as s; print(s.CELERY_BEAT_SCHEDULE_FILENAME)"

    default = run_python({"DEBUG": "true"}, code)
    chosen = run_python({"DEBUG": "true", "BEAT_SCHEDULE_FILE": "/srv/beat/schedule"}, code)

    assert default.returncode == 0, default.stderr
    path = Path(default.stdout.strip())
    assert path.is_absolute() and not path.is_relative_to(ROOT), path
    assert chosen.stdout.strip() == "/srv/beat/schedule"


def test_empty_numbers_mean_unset_and_values_are_taken_literally():
    env = Env(
        {
            "EMPTY": "  ",
            "FLAG": " Yes ",
            "HOSTS": " a.example , ,b.example ",
            "KEY": "$NOT_A_REFERENCE",
            "RATIO": "1e3",
        }
    )

    assert env.int("EMPTY", default=7) == 7
    assert env.bool("EMPTY", default=True) is True
    assert env.list("EMPTY", default=["a.example"]) == []  # ALLOWED_HOSTS= allows no host
    assert env.str("EMPTY", default="x") == "  "
    assert env.bool("FLAG", default=False) is True
    assert env.list("HOSTS", default=[]) == ["a.example", "b.example"]
    assert env.str("KEY", default="") == "$NOT_A_REFERENCE"
    assert env.float("RATIO", default=0.0) == 1000.0
    with pytest.raises(ImproperlyConfigured, match="^Set MISSING"):
        env.int("MISSING")
    with pytest.raises(ImproperlyConfigured, match="^RATIO='1e3' is not an integer"):
        env.int("RATIO", default=0)


def _settings_modules() -> list[Path]:
    return [
        ROOT / "memoryadmin" / "settings.py",
        *sorted((ROOT / "memoryadmin" / "conf").glob("*.py")),
    ]


def test_settings_read_the_environment_only_through_the_typed_reader():
    """No `os.environ` or `os.getenv` in the settings modules: a raw read is untyped and its
    error (if any) does not name the variable."""
    raw_reads = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in _settings_modules()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute)
        and node.attr in {"environ", "getenv"}
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
    ]

    assert raw_reads == []


def test_no_code_repeats_a_setting_default_with_getattr():
    """`getattr(settings, "X", default)` is a second default that drifts from the one in
    settings (MEMORY_STORE_NATIVE_ASYNC once defaulted to True there and False in the store)."""
    repeated = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / "memoryadmin").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) + len(node.keywords) >= 3
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == "settings"
    ]

    assert repeated == []
