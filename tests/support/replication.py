"""A real PostgreSQL primary and a streaming standby for the replica tests: Debian's PostgreSQL
binaries (`initdb`, `pg_basebackup -R`, `postgres`), run as the `postgres` user, each on a port
of its own, in a temporary folder; the schema made by `manage.py migrate`; each server stopped
by its pid. Plus a redis-server of our own (the shared cache the read-your-writes positions live
in) and a helper to run the in-process store in a process of its own configured on them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

from tests.client.servers import free_port
from tests.extraction.worker import ROOT

PG_BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))
DB_NAME = "memoryadmin"


def _as_postgres(*argv: str, **kwargs: Any) -> subprocess.CompletedProcess:
    command = list(argv)
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs)  # noqa: S603


class Server:
    """One PostgreSQL server (a data folder and a port)."""

    def __init__(self, data: Path, port: int) -> None:
        self.data = data
        self.port = port

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{DB_NAME}"

    def start(self) -> None:
        _as_postgres(
            str(PG_BIN / "pg_ctl"),
            "start",
            "-w",
            "-t",
            "60",
            "-D",
            str(self.data),
            "-l",
            str(self.data.parent / f"{self.data.name}.log"),
            "-o",
            f"-p {self.port} -k {self.data.parent}",
        )

    def pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None

    def stop(self, *, immediate: bool = False) -> None:
        """Stop by its pid: SIGINT (fast shutdown) or SIGQUIT (immediate), and wait."""
        pid = self.pid()
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGQUIT if immediate else signal.SIGINT)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)

    def sql(self, statement: str, params: Any = None, dbname: str = DB_NAME) -> list[tuple]:
        with psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname=dbname, autocommit=True
        ) as conn:
            cursor = conn.execute(statement, params)
            return cursor.fetchall() if cursor.description else []


class Cluster:
    """A primary with one streaming standby, made in a folder of its own."""

    def __init__(self, *, synchronous: bool = False) -> None:
        self.synchronous = synchronous
        self.root = Path(tempfile.mkdtemp(prefix="ma-replication-"))
        self.root.chmod(0o755)
        shutil.chown(self.root, "postgres", "postgres") if os.geteuid() == 0 else None
        self.primary = Server(self.root / "primary", free_port())
        self.standby = Server(self.root / "standby", free_port())

    def start(self) -> Cluster:
        _as_postgres(
            str(PG_BIN / "initdb"),
            "-D",
            str(self.primary.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
        )
        with (self.primary.data / "postgresql.conf").open("a") as conf:
            conf.write(
                "listen_addresses = '127.0.0.1'\n"
                "wal_level = replica\nmax_wal_senders = 5\nhot_standby = on\n"
                "fsync = off\nfull_page_writes = off\nsynchronous_commit = on\n"
                "max_connections = 200\n"
            )
        self.primary.start()
        started = time.monotonic()
        self.primary.sql(f"CREATE DATABASE {DB_NAME}", dbname="postgres")
        env = {**os.environ, "DATABASE_URL": self.primary.url}
        env.pop("DATABASE_REPLICA_URLS", None)
        subprocess.run(  # noqa: S603 - fixed argv
            [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
        self.migrate_seconds = time.monotonic() - started
        _as_postgres(
            str(PG_BIN / "pg_basebackup"),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.primary.port),
            "-U",
            "postgres",
            "-D",
            str(self.standby.data),
            "-R",
            "-X",
            "stream",
            "--no-sync",
            "--checkpoint=fast",
        )
        self.standby.start()
        if self.synchronous:  # a commit is acknowledged once the standby has it on disk
            self.primary.sql("ALTER SYSTEM SET synchronous_standby_names = '*'")
            self.primary.sql("SELECT pg_reload_conf()")
        self.wait_replayed()
        return self

    @property
    def failover_url(self) -> str:
        """libpq multi-host: whichever of the two accepts writes."""
        return (
            f"postgres://postgres@127.0.0.1:{self.primary.port},127.0.0.1:{self.standby.port}"
            f"/{DB_NAME}?target_session_attrs=read-write&connect_timeout=2"
        )

    def promote(self) -> None:
        _as_postgres(str(PG_BIN / "pg_ctl"), "promote", "-w", "-D", str(self.standby.data))

    def stop(self) -> None:
        self.standby.stop()
        self.primary.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def wait_replayed(self, timeout: float = 30) -> None:
        """Until the standby has replayed everything the primary has written."""
        (target,) = self.primary.sql("SELECT pg_current_wal_lsn()")[0]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                (done,) = self.standby.sql(
                    "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [str(target)]
                )[0]
            except psycopg.OperationalError:
                done = False
            if done:
                return
            time.sleep(0.05)
        raise TimeoutError("the standby did not catch up")

    def pause_replay(self) -> None:
        self.standby.sql("SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        self.standby.sql("SELECT pg_wal_replay_resume()")


class Redis:
    """A redis-server of our own on a free port, stopped by its pid."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.folder = folder
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> Redis:
        self.process = subprocess.Popen(  # noqa: S603 - fixed argv
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
            + ["--appendonly", "no", "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(200):
            ping = subprocess.run(
                ["redis-cli", "-p", str(self.port), "ping"],  # noqa: S607
                capture_output=True,
                text=True,
            )
            if ping.stdout.strip() == "PONG":
                return self
            time.sleep(0.05)
        raise RuntimeError("redis-server did not answer")

    def positions_started_long_ago(self) -> None:
        """The read-your-writes positions' map as a long-running deployment has it: started
        long before (a fresh map sends every read to the primary for a while;
        memoryadmin/db/positions.py)."""
        import redis

        from memoryadmin.db.positions import SENTINEL

        client = redis.Redis.from_url(self.url)
        try:
            client.set(SENTINEL, client.time()[0] - 3600)
        finally:
            client.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def remove(self) -> None:
        """Stopped for good: its folder goes too."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def app_env(cluster: Cluster, redis_url: str, **extra: str) -> dict[str, str]:
    """The environment of an app process on the cluster, reading from its standby."""
    return {
        "DATABASE_URL": cluster.primary.url,
        "DATABASE_REPLICA_URLS": cluster.standby.url,
        "DATABASE_REPLICA_MAX_LAG_SECONDS": "300",
        "DATABASE_REPLICA_CHECK_SECONDS": "0.2",
        "CACHE_URL": redis_url,
        "CELERY_BROKER_URL": "",
        **extra,
    }


STORE_SCRIPT = """
import asyncio, json, sys
import django
django.setup()
from memoryadmin.facts.store import DjangoMemoryStore
from memoryadmin_client.types import MemoryFact

async def main(steps):
    out = []
    async with DjangoMemoryStore(native=True) as store:
        for step in steps:
            if step[0] == "upsert":
                fact = MemoryFact(key=step[2], value=step[3], category="preference")
                await store.upsert_facts(step[1], [fact])
                out.append(None)
            elif step[0] == "delete":
                out.append(await store.delete_fact(step[1], step[2]))
            elif step[0] == "get":
                out.append({f.key: f.value for f in await store.get_facts(step[1])})
    return out

print(json.dumps(asyncio.run(main(json.loads(sys.argv[1])))))
"""


def run_script(env: dict[str, str], script: str, argument: str) -> Any:
    """A Python script of the app in a process of its own on the cluster (settings from `env`):
    what its last line printed, as JSON."""
    done = subprocess.run(  # noqa: S603 - fixed argv
        [sys.executable, "-c", script, argument],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "memoryadmin.settings", **env},
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_store(env: dict[str, str], steps: list[list[str]]) -> list[Any]:
    """`DjangoMemoryStore` (its native async path) in a process of its own on the cluster."""
    return run_script(env, STORE_SCRIPT, json.dumps(steps))
