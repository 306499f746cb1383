"""A small Anthropic Messages API stand-in, so tests drive the REAL `anthropic` SDK over HTTP.

It answers POST /v1/messages from a script queue (tool_use answers, API errors, delays), records
every request body, and can run a callback while a request is in flight (to land a purge between
the model call and the write).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import socketserver
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

_ids = itertools.count(1)

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass
class Reply:
    """One scripted answer: a JSON body with a status, after an optional delay/callback."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    callback: Callable[[], None] | None = None


def tool_use(
    facts: Iterable[dict[str, Any]] = (),
    *,
    text: str | None = None,
    blocks: Iterable[dict[str, Any]] | None = None,
    model: str = "claude-haiku-4-5-20251001",
    input_tokens: int = 321,
    output_tokens: int = 54,
    delay: float = 0.0,
    callback: Callable[[], None] | None = None,
) -> Reply:
    """A Messages API answer with one record_fact tool_use block per fact (or raw `blocks`)."""
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    if blocks is not None:
        content.extend(blocks)
    else:
        for fact in facts:
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_fake{next(_ids):06d}",
                    "name": "record_fact",
                    "input": dict(fact),
                }
            )
    has_tools = any(block.get("type") == "tool_use" for block in content)
    body = {
        "id": f"msg_fake{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if has_tools else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }
    return Reply(200, body, delay=delay, callback=callback)


def api_error(
    status: int,
    message: str = "scripted failure",
    *,
    retry_after: float | None = None,
    delay: float = 0.0,
) -> Reply:
    """An Anthropic-shaped error body: {"type": "error", "error": {"type", "message"}}."""
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    body = {
        "type": "error",
        "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message},
    }
    return Reply(status, body, headers=headers, delay=delay)


def _close_thread_connections() -> None:
    """A callback that touched the database did so on this server thread's own connection;
    close it so the test database can be dropped at the end of the run."""
    from django.db import connections

    connections.close_all()


class FakeAnthropic:
    """Threaded HTTP/1.1 server on 127.0.0.1:<free port>. `script(...)` queues replies; when the
    queue is empty `fallback` answers (a 500 'no scripted answer' unless set)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.fallback: Reply | None = None
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        """Forget the script and the recorded requests (for a server shared by several tests)."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.headers.clear()
        self.fallback = None

    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def _next(self) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return self.fallback or api_error(500, "fake server: no scripted answer")

    def start(self) -> FakeAnthropic:
        self._server = _Server(self)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop answering: the port is closed and so are the open connections, so clients
        get connection errors (a kept-alive connection would otherwise still be answered)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server.close_connections()
            self._server = None

    def _answer(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        if method != "POST" or path.split("?")[0] != "/v1/messages":
            return api_error(404, "unknown path")
        try:
            payload = json.loads(raw)
        except ValueError:
            return api_error(400, "body is not JSON")
        with self._lock:
            self.requests.append(payload)
            self.headers.append(headers)
        reply = self._next()
        if reply.callback is not None:
            try:
                reply.callback()
            finally:
                _close_thread_connections()
        if reply.delay:
            time.sleep(reply.delay)
        return reply


def _response(reply: Reply) -> bytes:
    """Status line, headers and body as one buffer, sent in one write."""
    data = json.dumps(reply.body).encode()
    try:
        phrase = HTTPStatus(reply.status).phrase
    except ValueError:
        phrase = "Status"
    headers = {
        "content-type": "application/json",
        "content-length": str(len(data)),
        "request-id": f"req_fake{next(_ids):06d}",
        **reply.headers,
    }
    head = f"HTTP/1.1 {reply.status} {phrase}\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in headers.items()
    )
    return head.encode("latin-1") + b"\r\n" + data


class _Handler(socketserver.StreamRequestHandler):
    """HTTP/1.1 with keep-alive, as little of it as the SDK needs, so the fake answers about as
    fast as a real local server: it runs in the caller's process, and http.server's request
    parsing (the email package) and its separate writes of headers and body cost more than
    the client's own work. Nagle is off and each answer leaves in one write: a body written
    after its headers waits for the client's delayed ACK (about 40 ms on Linux loopback)."""

    disable_nagle_algorithm = True
    server: _Server

    def handle(self) -> None:
        self.server.track(self.connection)
        try:
            while self._one_request():
                pass
        except OSError:  # the client went away, or stop() closed the connection
            return
        finally:
            self.server.untrack(self.connection)

    def _one_request(self) -> bool:
        line = self.rfile.readline(65537)
        parts = line.split()
        if len(parts) < 3:
            return False  # closed, or not HTTP
        headers: dict[str, str] = {}
        while True:
            header = self.rfile.readline(65537)
            if header in (b"\r\n", b"\n", b""):
                break
            name, _, value = header.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        raw = self.rfile.read(int(headers.get("content-length") or 0))
        reply = self.server.fake._answer(
            parts[0].decode("latin-1"), parts[1].decode("latin-1"), headers, raw
        )
        self.wfile.write(_response(reply))
        return headers.get("connection", "").lower() != "close"


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, fake: FakeAnthropic) -> None:
        self.fake = fake
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def track(self, conn: socket.socket) -> None:
        with self._open_lock:
            self._open.add(conn)

    def untrack(self, conn: socket.socket) -> None:
        with self._open_lock:
            self._open.discard(conn)

    def close_connections(self) -> None:
        with self._open_lock:
            open_now, self._open = self._open, set()
        for conn in open_now:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


@contextmanager
def serving(settings: Any) -> Iterator[FakeAnthropic]:
    """Run a fake Messages server and point the Django settings (the real SDK) at it."""
    server = FakeAnthropic().start()
    settings.ANTHROPIC_API_KEY = "sk-ant-test-fake"
    settings.ANTHROPIC_BASE_URL = server.base_url
    settings.ANTHROPIC_TIMEOUT_SECONDS = 5.0
    settings.ANTHROPIC_RETRY_BACKOFF_SECONDS = 0.01
    settings.ANTHROPIC_RETRY_BACKOFF_MAX_SECONDS = 0.05
    try:
        yield server
    finally:
        server.stop()
