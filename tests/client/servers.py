"""Small real socket servers for the client tests: a TCP proxy that drops connections, and an
HTTP server that answers with canned responses (for statuses the real API has no reason to
produce on demand, such as 503 from a load balancer)."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class DroppingProxy:
    """Listens on 127.0.0.1. The first `drop` connections (all of them when `drop` is None) are
    read once and closed without an answer, like a server that died mid-request; the others are
    piped to `upstream`. `requests` keeps the first bytes seen on every connection."""

    def __init__(self, upstream: tuple[str, int] | None = None, *, drop: int | None = 1) -> None:
        self.upstream = upstream
        self.drop = drop
        self.connections = 0
        self.requests: list[bytes] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> DroppingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def _serve(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.connections += 1
                number = self.connections
            threading.Thread(target=self._handle, args=(conn, number), daemon=True).start()

    def _handle(self, conn: socket.socket, number: int) -> None:
        conn.settimeout(5)
        try:
            first = conn.recv(65536)
        except OSError:
            conn.close()
            return
        with self._lock:
            self.requests.append(first)
        if self.upstream is None or self.drop is None or number <= self.drop:
            conn.close()
            return
        upstream = socket.create_connection(self.upstream, timeout=5)
        upstream.sendall(first)
        threading.Thread(target=_pump, args=(upstream, conn), daemon=True).start()
        _pump(conn, upstream)


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            target.sendall(chunk)
    except OSError:
        pass
    finally:
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


def header_of(raw_request: bytes, name: str) -> str | None:
    """A header's value in a raw HTTP request, or None."""
    head = raw_request.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    for line in head.split("\r\n")[1:]:
        key, _, value = line.partition(":")
        if key.strip().lower() == name.lower():
            return value.strip()
    return None


@dataclass
class Canned:
    status: int
    body: Any = None  # dict/list -> JSON; str -> sent as text
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class CannedHttpServer:
    """Answers each request with the next canned response (the last one repeats)."""

    def __init__(self, responses: Iterable[Canned]) -> None:
        self.responses = list(responses)
        self.seen: list[Seen] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                owner.seen.append(
                    Seen(
                        self.command,
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                    )
                )
                canned = owner.responses[min(len(owner.seen), len(owner.responses)) - 1]
                if isinstance(canned.body, str):
                    payload, kind = canned.body.encode(), "text/html"
                elif canned.body is None:
                    payload, kind = b"", "application/json"
                else:
                    payload, kind = json.dumps(canned.body).encode(), "application/json"
                self.send_response(canned.status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in canned.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_PUT = do_POST = do_DELETE = _answer

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> CannedHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def free_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return sock.getsockname()[1]
