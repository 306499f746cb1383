"""The embedded PostgreSQL of `make run` and `make test`, started as a person starts it: the
wrapper command in a fresh data folder, no DATABASE_URL; and `make run` itself, on a free port."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.integration  # starts PostgreSQL servers of its own

PROBE = (
    'echo "url=$DATABASE_URL"; '
    'psql "$DATABASE_URL" -tAc "SELECT version()"; '
    'psql "$DATABASE_URL" -tAc "CREATE EXTENSION IF NOT EXISTS pg_trgm; '
    "CREATE TABLE IF NOT EXISTS kept (n int); INSERT INTO kept VALUES (1); "
    'SELECT count(*) FROM kept"'
)


def _env(pgdata: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    return {**env, "EMBEDDED_PGDATA": str(pgdata), **extra}


def _wrapper(*command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - fixed argv
        [sys.executable, "-m", "memoryadmin.embedded_db", "run", "--", *command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _postgres_running(pgdata: Path) -> bool:
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text().split()[0])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def pgdata(tmp_path: Path):
    folder = tmp_path / "pgdata"
    yield folder
    if _postgres_running(folder):  # a failed test must not leave a server behind
        subprocess.run(  # noqa: S603 - fixed argv
            [sys.executable, "-m", "memoryadmin.embedded_db", "stop"],
            cwd=ROOT,
            env=_env(folder),
            capture_output=True,
            timeout=60,
        )


def test_a_command_runs_on_postgresql_18_with_trigrams_and_the_data_is_kept(pgdata):
    first = _wrapper("sh", "-c", PROBE, env=_env(pgdata))
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0].startswith("url=postgres://postgres@") and lines[0].endswith("/memoryadmin")
    assert lines[1].startswith("PostgreSQL 18.")
    assert lines[-1] == "1"
    assert not _postgres_running(pgdata), "the server stops when the command ends"

    second = _wrapper("sh", "-c", PROBE, env=_env(pgdata))
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines()[-1] == "2", "the data folder is reused across runs"


def test_a_given_database_url_wins_and_nothing_is_started(pgdata):
    given = "postgres://someone@db.invalid:5432/theirs"
    done = _wrapper("sh", "-c", 'echo "$DATABASE_URL"', env=_env(pgdata, DATABASE_URL=given))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == given
    assert not pgdata.exists()


def test_the_exit_status_of_the_command_is_the_wrappers(pgdata):
    assert _wrapper("sh", "-c", "exit 3", env=_env(pgdata)).returncode == 3


def test_a_stale_lock_gets_one_clear_line_not_a_traceback(pgdata):
    assert _wrapper("true", env=_env(pgdata)).returncode == 0  # initialised, stopped
    (pgdata / "postmaster.pid").write_text(f"{os.getpid()}\n{pgdata}\n")
    done = _wrapper("true", env=_env(pgdata))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "stale lock" in line and "postmaster.pid" in line


def test_the_readme_token_command_works_on_a_fresh_checkout(pgdata):
    """README, "agent host": create_service_token as written, with nothing set (no DEBUG, no
    SECRET_KEY, no DATABASE_URL), through the embedded wrapper; the secret is the last line."""
    env = {"PATH": os.environ.get("PATH", ""), "EMBEDDED_PGDATA": str(pgdata)}
    migrated = _wrapper(sys.executable, "manage.py", "migrate", "--noinput", "-v", "0", env=env)
    assert migrated.returncode == 0, migrated.stderr
    scopes = ["--scope", "memory:read", "--scope", "memory:write", "--scope", "turns:write"]
    made = _wrapper(
        sys.executable, "manage.py", "create_service_token", "airline-agent", *scopes, env=env
    )
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip().splitlines()[-1].startswith("mat_")


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _sqlite_files() -> set[Path]:
    """Where the old SQLite default put its file, and anywhere in the app's own tree."""
    return {*ROOT.glob("*.sqlite3"), *(ROOT / "memoryadmin").rglob("*.sqlite3")}


def test_make_run_serves_the_staff_login_and_healthz_and_stops_cleanly_on_ctrl_c(pgdata):
    """The README's first command, on the embedded PostgreSQL: no DATABASE_URL, no SQLite."""
    port = _free_port()
    before = _sqlite_files()
    process = subprocess.Popen(  # noqa: S603 - fixed argv
        ["make", "--no-print-directory", "run", f"RUN_PORT={port}"],
        cwd=ROOT,
        env=_env(pgdata),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's Ctrl-C reaches it
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            assert process.poll() is None, process.stdout.read()
            try:
                if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        assert httpx.get(base + "/healthz", timeout=5).status_code == 200
        login = httpx.get(base + "/login/", timeout=5)
        assert login.status_code == 200 and 'name="password"' in login.text
        assert _postgres_running(pgdata)
    finally:
        os.killpg(process.pid, signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    assert "Traceback" not in output
    assert "/portal/open/" in output  # the demo link, printed for the person at the terminal
    assert not _postgres_running(pgdata), "Ctrl-C stops the embedded server"
    assert _sqlite_files() == before == set()
