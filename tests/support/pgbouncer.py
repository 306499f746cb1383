"""Debian's real pgbouncer (1.18) in transaction mode in front of a PostgreSQL server, for the
pooler tests: its own port, its own folder, run as the `postgres` user (pgbouncer refuses
root), stopped by its pid."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.client.servers import free_port


class PgBouncer:
    def __init__(self, *, server_host: str, server_port: int, pool_size: int = 10) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="ma-pgbouncer-"))
        self.folder.chmod(0o755)
        self.port = free_port()
        self.server_host = server_host
        self.server_port = server_port
        self.pool_size = pool_size
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> PgBouncer:
        (self.folder / "userlist.txt").write_text('"postgres" ""\n')
        (self.folder / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={self.server_host} port={self.server_port}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.folder}/userlist.txt\n"
            "pool_mode = transaction\nmax_client_conn = 500\n"
            f"default_pool_size = {self.pool_size}\n"
            "ignore_startup_parameters = extra_float_digits\n"
            "server_connect_timeout = 5\nserver_login_retry = 1\n"
            f"logfile = {self.folder}/pgbouncer.log\n"
        )
        user = self._run_as()
        if os.geteuid() == 0:
            for path in [self.folder, *self.folder.iterdir()]:
                shutil.chown(path, user, user)
        argv = ["/usr/sbin/pgbouncer", str(self.folder / "pgbouncer.ini")]
        if os.geteuid() == 0:  # pgbouncer drops to this user itself (its pid stays ours)
            argv[1:1] = ["-u", user]
        self.process = subprocess.Popen(argv)  # noqa: S603 - fixed argv
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"pgbouncer did not start: {self.log()}")

    def _run_as(self) -> str:
        """`postgres`, or, for a server on a Unix socket (the embedded one, whose socket folder
        only its own user may enter), the owner of that folder."""
        if self.server_host.startswith("/"):
            return Path(self.server_host).owner()
        return "postgres"

    def log(self) -> str:
        try:
            return (self.folder / "pgbouncer.log").read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # "safe shutdown"
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, dbname: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{dbname}"
