"""Every staff and portal page declares the HTTP methods it answers (memoryadmin/http_methods.py),
and answers any other method with 405: a page that only shows something takes GET and HEAD
alone, so a POST to it never renders the page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.staff.conftest import make_staff

pytestmark = pytest.mark.django_db

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
# A value for each URL parameter: the method check comes before any lookup, so none must exist.
SAMPLES = {
    "subject_id": "FF-1",
    "key": "seat_preference",
    "digest": "0123abcd",
    "action": "approve",
    "session_tag": "0123456789ab",
    "turn_id": "t-1",
    "secret": "x",
    "reason": "expired",
    "number": "PR-1",
    "version": 1,
}
# The portal's catch-all answers every method with its 404 page.
NOT_PAGES = {"portal:not-found"}


def _pages(patterns: list[Any], namespace: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}:{entry.namespace}" if namespace else entry.namespace or ""
            yield from _pages(entry.url_patterns, inner.strip(":"))
        elif namespace and namespace.split(":")[0] in {"staff", "portal", "settings", "privacy"}:
            yield f"{namespace}:{entry.name}", entry


PAGES = sorted(
    (name, entry) for name, entry in _pages(get_resolver().url_patterns) if name not in NOT_PAGES
)


def _url(name: str, entry: URLPattern) -> str:
    kwargs = {
        param: 1 if param.endswith("_id") and param != "subject_id" else SAMPLES[param]
        for param in entry.pattern.converters
    }
    return reverse(name, kwargs=kwargs)


def test_every_staff_and_portal_page_declares_its_methods():
    assert len(PAGES) > 60
    undeclared = [name for name, entry in PAGES if not hasattr(entry.callback, "http_methods")]
    assert undeclared == []


def test_a_method_a_page_does_not_declare_gets_405(client: Client):
    """Every page, every method it does not declare, as a privacy admin (who may open every
    staff page): one sign-in for the walk, each failure listed."""
    client.force_login(make_staff("priya", "privacy_admin"))
    wrong = []
    for name, entry in PAGES:
        declared = entry.callback.http_methods
        url = _url(name, entry)
        for method in METHODS:
            if method in declared:
                continue
            response = client.generic(method, url)
            if response.status_code != 405 or set(response["Allow"].split(", ")) != declared:
                wrong.append((name, method, response.status_code))
    assert wrong == []


def test_read_only_pages_refuse_a_post():
    """The case reported: a viewer's POST to the unused-facts page rendered it."""
    read_only = [name for name, entry in PAGES if entry.callback.http_methods == {"GET", "HEAD"}]
    assert "staff:unused" in read_only and "staff:overview" in read_only
    assert "portal:export-page" in read_only and "settings:history" in read_only
    client = Client()
    client.force_login(make_staff("vera", "viewer"))
    assert client.post("/staff/unused/").status_code == 405
