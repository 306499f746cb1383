"""HttpMemoryStore.portal_link against the real API: the link it returns opens the portal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import httpx
import pytest

from memoryadmin.api.models import Scope
from memoryadmin.api.tokens import token_issue
from memoryadmin.portal.models import PortalLink as PortalLinkRow
from memoryadmin_client import PortalLink
from memoryadmin_client.errors import AuthError, Unavailable
from memoryadmin_client.http import HttpMemoryStore
from tests.facts.store_contract import run

from .servers import DroppingProxy

pytestmark = pytest.mark.django_db(transaction=True)


def test_portal_link_returns_a_url_that_opens_the_portal_once(live_server, http_store):
    link = run(http_store.portal_link, "FF-100231")

    assert isinstance(link, PortalLink)
    assert link.url.startswith(f"{live_server.url}/portal/open/")
    now = datetime.now(UTC)
    assert now + timedelta(minutes=14) < link.expires_at <= now + timedelta(minutes=15)
    with httpx.Client(follow_redirects=False) as browser:
        shown = browser.get(link.url)  # a GET only shows the button (mail scanners open links)
        assert shown.status_code == 200 and not shown.cookies.get("portal_session")
        opened = browser.post(link.url, data={"csrfmiddlewaretoken": browser.cookies["csrftoken"]})
        assert opened.status_code == 302
        assert opened.cookies.get("portal_session")
    with httpx.Client(follow_redirects=True) as other:
        assert other.get(link.url).status_code == 410  # spent


def test_a_token_without_portal_issue_gets_an_auth_error_and_no_link(live_server):
    _, secret = token_issue(name="reader", scopes=[Scope.MEMORY_READ.value])
    store = HttpMemoryStore(live_server.url, secret)

    with pytest.raises(AuthError) as caught:
        run(store.portal_link, "FF-100231")

    assert caught.value.status == 403
    assert PortalLinkRow.objects.count() == 0


def test_a_lost_answer_is_not_retried(live_server, api_token):
    """Each call issues a link; retrying blindly would leave a second working link behind."""
    upstream = urlsplit(live_server.url)
    with DroppingProxy((upstream.hostname, upstream.port), drop=1) as proxy:
        store = HttpMemoryStore(proxy.url, api_token, retries=3, backoff=0.01)
        with pytest.raises(Unavailable):
            run(store.portal_link, "FF-100231")
    assert proxy.connections == 1
