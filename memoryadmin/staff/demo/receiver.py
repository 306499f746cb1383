"""The demo's webhook recipient: a stand-in for the airline's CRM that `make run` serves at
/demo/webhooks/ (mounted only with DEBUG on). It checks each delivery as a real recipient must,
by the Standard Webhooks signature and a timestamp close to its own clock, and answers 204, so
the demo's deliveries really go out over HTTP and are acknowledged; a bad signature gets 401.

Its secret is fixed and public, like the demo's authenticator key: demo data only.

`make run` seeds the demo before its server is up, so while the seed runs it serves this same
check on the demo's address itself (`serving`), unless something already listens there.
"""

from __future__ import annotations

import hmac
import logging
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from standardwebhooks.webhooks import Webhook

DEMO_WEBHOOK_SECRET = "whsec_bWVtb3J5YWRtaW4tZGVtby1yZWNlaXZlci1zZWNyZXQ="
RECEIVER_PATH = "/demo/webhooks/"
# As the Standard Webhooks libraries do: a delivery signed further than this from the
# receiver's clock is refused (a replay, or a clock gone wrong).
TOLERANCE = timedelta(minutes=5)
BODY_LIMIT = 64 * 1024

logger = logging.getLogger(__name__)


def acknowledge(body: bytes, headers: Mapping[str, str]) -> int:
    """The status the demo CRM answers a delivery with: 204 when it is signed with the demo
    secret at about the receiver's time, 401 when not, 400 when headers are missing. The time
    is Django's clock, so a demo seeded on its story's clock is checked on that clock too."""
    msg_id = headers.get("webhook-id", "")
    stamp = headers.get("webhook-timestamp", "")
    signatures = headers.get("webhook-signature", "")
    if not (msg_id and stamp.isdigit() and signatures):
        return 400
    signed_at = datetime.fromtimestamp(int(stamp), tz=UTC)
    if abs(timezone.now() - signed_at) > TOLERANCE:
        return 401
    expected = Webhook(DEMO_WEBHOOK_SECRET).sign(msg_id, signed_at, body).encode()
    if any(hmac.compare_digest(expected, given.encode()) for given in signatures.split(" ")):
        return 204
    return 401


@csrf_exempt
@require_POST
def receive(request: HttpRequest) -> HttpResponse:
    status = acknowledge(request.body[:BODY_LIMIT], request.headers)
    if status != 204:
        logger.warning("demo webhook receiver refused a delivery: %s", status)
    return HttpResponse(status=status)


urlpatterns = [path(RECEIVER_PATH.strip("/") + "/", receive, name="demo-webhooks")]


def receiver_url(base_url: str) -> str:
    return base_url.rstrip("/") + RECEIVER_PATH


def _wsgi(environ: dict, start_response) -> list[bytes]:
    """The same check as a bare WSGI app, for the seed's own short-lived server."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(min(length, BODY_LIMIT))
    headers = {
        name[5:].replace("_", "-").lower(): value
        for name, value in environ.items()
        if name.startswith("HTTP_")
    }
    if environ["REQUEST_METHOD"] != "POST" or environ["PATH_INFO"] != RECEIVER_PATH:
        status = 404
    else:
        status = acknowledge(body, headers)
    start_response(f"{status} {'No Content' if status == 204 else 'Refused'}", [])
    return []


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        pass


@contextmanager
def serving(base_url: str) -> Iterator[bool]:
    """Serve the receiver at `base_url` while the block runs; yields whether it does (False:
    something listens there already, e.g. the demo's own server, which serves it too)."""
    parts = urlsplit(base_url)
    try:
        server: WSGIServer = make_server(
            parts.hostname or "127.0.0.1", parts.port or 80, _wsgi, handler_class=_Quiet
        )
    except OSError:
        yield False
        return
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield True
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
