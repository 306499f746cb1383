"""A small Anthropic Messages API stand-in, so tests drive the REAL `anthropic` SDK over HTTP.

It answers POST /v1/messages from a script queue (tool_use answers, API errors, delays), records
every request body, and can run a callback while a request is in flight (to land a purge between
the model call and the write).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

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
            content.append({
                "type": "tool_use",
                "id": f"toolu_fake{next(_ids):06d}",
                "name": "record_fact",
                "input": dict(fact),
            })
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
    body = {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"),
                                       "message": message}}
    return Reply(status, body, headers=headers, delay=delay)


def _close_thread_connections() -> None:
    """A callback that touched the database did so on this server thread's own connection;
    close it so the test database can be dropped at the end of the run."""
    from django.db import connections

    connections.close_all()


class FakeAnthropic:
    """Threaded HTTP server on 127.0.0.1:<free port>. `script(...)` queues replies; when the
    queue is empty `fallback` answers (a 500 'no scripted answer' unless set)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.fallback: Reply | None = None
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
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
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Answer as a real server does: the status line, headers and body leave in one
            # write with Nagle off. Unbuffered, http.server writes the headers and the body
            # separately, and Nagle holds the body until the client's delayed ACK of the
            # headers (about 40 ms on Linux loopback), far more than the rest of a turn.
            wbufsize = 64 * 1024
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                return

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if self.path.split("?")[0] != "/v1/messages":
                    self._send(api_error(404, "unknown path"))
                    return
                try:
                    payload = json.loads(raw)
                except ValueError:
                    self._send(api_error(400, "body is not JSON"))
                    return
                with fake._lock:
                    fake.requests.append(payload)
                    fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                reply = fake._next()
                if reply.callback is not None:
                    try:
                        reply.callback()
                    finally:
                        _close_thread_connections()
                if reply.delay:
                    time.sleep(reply.delay)
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                data = json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", f"req_fake{next(_ids):06d}")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop answering; the port is closed, so clients get connection errors."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


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


@pytest.fixture
def fake_anthropic(settings: Any) -> Iterator[FakeAnthropic]:
    """A running fake Messages server; the Django settings point the real SDK at it."""
    with serving(settings) as server:
        yield server
