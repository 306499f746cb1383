"""A real HTTP receiver for webhook tests: http.server in a thread, answering with the status
codes it is given in turn, verifying every request with the standardwebhooks library."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

PORTS = range(8220, 8230)


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    verified: bool
    payload: Any = None


@dataclass
class Receiver:
    secret: str = ""
    statuses: list[int] = field(default_factory=list)  # answered in turn; then 200
    received: list[Received] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/hooks/memory"

    def start(self) -> Receiver:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {name.lower(): value for name, value in self.headers.items()}
                try:
                    payload = Webhook(outer.secret).verify(body, headers)
                    verified = True
                except WebhookVerificationError:
                    payload, verified = None, False
                outer.received.append(Received(headers, body, verified, payload))
                status = outer.statuses.pop(0) if outer.statuses else 200
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: object) -> None:
                pass

        for port in PORTS:
            try:
                self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
                break
            except OSError:
                continue
        else:
            raise RuntimeError("no free port in 8220-8229")
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def payloads(self) -> list[Any]:
        return [json.loads(item.body) for item in self.received]
