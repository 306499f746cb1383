"""A real OpenID provider (npm `oidc-provider`, tests/oidc/provider.mjs) run by node on a
loopback port, and a helper that walks its sign-in the way a browser does: our start URL, the
provider's authorization endpoint, its login form, and back to our callback."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import pytest
import requests
from django.test import Client

from memoryadmin.staff import sso
from tests.staff.conftest import editor, privacy_admin, viewer  # noqa: F401 - fixtures

OIDC_DIR = Path(__file__).resolve().parent.parent / "oidc"
PORT = 8242  # issue 24's port range, 8240-8249
ISSUER = f"http://127.0.0.1:{PORT}"
CLIENT = {
    "client_id": "memoryadmin-staff",
    "client_secret": "test-client-secret-0123456789",
    "redirect_uris": ["http://testserver/oidc/callback/"],
}
PASSWORD = "idp-password"  # noqa: S105 - the test provider's


class Provider:
    def __init__(self, state_path: Path) -> None:
        self.state_path = state_path
        self.reset()

    def reset(self) -> None:
        self.state: dict[str, Any] = {"client": CLIENT, "accounts": {}, "tamper": {}}
        self.write()

    def write(self) -> None:
        self.state_path.write_text(json.dumps(self.state))

    def account(self, login: str, groups: list[str], amr: list[str] | None = None) -> None:
        self.state["accounts"][login] = {
            "password": PASSWORD,
            "email": f"{login}@airline.example",
            "groups": groups,
            "amr": amr or ["pwd"],
        }
        self.write()

    def tamper(self, **how: Any) -> None:
        self.state["tamper"] = how
        self.write()


@pytest.fixture(scope="session")
def oidc_server(tmp_path_factory) -> Iterator[Provider]:
    node = shutil.which("node")
    assert node, "node is needed for the OpenID provider (apt-get install nodejs)"
    assert (OIDC_DIR / "node_modules" / "oidc-provider").is_dir(), (
        "run `npm ci` in tests/oidc (make setup does)"
    )
    provider = Provider(tmp_path_factory.mktemp("oidc") / "state.json")
    log = open(provider.state_path.with_suffix(".log"), "w")  # noqa: SIM115
    process = subprocess.Popen(
        [node, str(OIDC_DIR / "provider.mjs"), str(PORT), str(provider.state_path)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, provider.state_path.with_suffix(".log").read_text()
                assert time.monotonic() < deadline, "the OpenID provider did not start"
                time.sleep(0.2)
        yield provider
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


@pytest.fixture
def idp(oidc_server: Provider, settings) -> Iterator[Provider]:
    settings.OIDC_ISSUER = ISSUER
    settings.OIDC_RP_CLIENT_ID = CLIENT["client_id"]
    settings.OIDC_RP_CLIENT_SECRET = CLIENT["client_secret"]
    settings.STAFF_PASSWORD_LOGIN = False
    settings.OIDC_CLOCK_SKEW_SECONDS = 0
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, sso.SSO_BACKEND]
    sso.forget_discovery()
    oidc_server.reset()
    yield oidc_server
    oidc_server.reset()
    sso.forget_discovery()


def walk_to_callback(
    client: Client, login: str, browser: requests.Session | None = None, password: str = PASSWORD
) -> tuple[str, requests.Session]:
    """Start at /oidc/authenticate/, sign in at the provider; returns our callback's address
    (path and query) as the provider redirected to it, and the browser's provider cookies."""
    start = client.get("/oidc/authenticate/")
    assert start.status_code == 302, start.content[:300]
    assert start["Location"].startswith(f"{ISSUER}/auth?")
    browser = browser or requests.Session()
    answer = browser.get(start["Location"], allow_redirects=False, timeout=10)
    for _ in range(6):
        location = answer.headers.get("location", "")
        if location.startswith("http://testserver/"):
            return location.removeprefix("http://testserver"), browser
        if answer.status_code == 200 and "<form" in answer.text:
            action = re.search(r'action="([^"]+)"', answer.text).group(1)
            answer = browser.post(
                urljoin(ISSUER, action),
                timeout=10,
                allow_redirects=False,
                data={"login": login, "password": password},
            )
            continue
        assert location, (answer.status_code, answer.text[:300])
        answer = browser.get(urljoin(ISSUER, location), allow_redirects=False, timeout=10)
    raise AssertionError("the provider never sent the browser back")


@pytest.fixture
def sso_sign_in(idp) -> Callable[..., Any]:
    def sign_in(login: str, client: Client | None = None) -> tuple[Client, Any]:
        client = client or Client()
        callback, _ = walk_to_callback(client, login)
        return client, client.get(callback)

    return sign_in
