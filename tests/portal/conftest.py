"""Portal fixtures: a browser-like client signed in as one traveller through a real link."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.core.cache import cache
from django.test import Client

from memoryadmin.portal.auth import COOKIE_NAME
from memoryadmin.portal.services import portal_link_issue
from tests.factories import FactFactory

A = "FF-A-0001"
B = "FF-B-0002"


def open_url(secret: str) -> str:
    return f"/portal/open/{secret}"


@pytest.fixture(autouse=True)
def _fresh_throttle_counts():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def _airline_zone(settings):
    """The portal's times are the airline's one zone: here the demo's, Asia/Taipei, so that a
    time in UTC would show."""
    settings.TIME_ZONE = "Asia/Taipei"


@pytest.fixture
def issue_link(db) -> Callable[[str], str]:
    def issue(subject_id: str) -> str:
        return portal_link_issue(subject_id=subject_id, issued_by="test").secret

    return issue


@pytest.fixture
def signed_in(issue_link) -> Callable[..., Client]:
    """A client whose portal session belongs to `subject_id`, opened the way a traveller does."""

    def sign_in(subject_id: str, *, language: str = "en") -> Client:
        client = Client(HTTP_ACCEPT_LANGUAGE=language)
        response = client.post(open_url(issue_link(subject_id)))
        assert response.status_code == 302, response.content[:300]
        assert response.cookies[COOKIE_NAME].value
        return client

    return sign_in


@pytest.fixture
def two_travellers(db):
    """A and B each with facts under the same keys, so a key alone never tells them apart."""
    for subject, words in ((A, "Alpha"), (B, "Bravo")):
        FactFactory(subject_id=subject, key="seat_preference", value=f"{words} aisle seat")
        FactFactory(
            subject_id=subject,
            key="overnight_flight",
            value=f"{words} avoids red-eyes",
            category="constraint",
        )
        FactFactory(
            subject_id=subject,
            key="travel_party",
            value=f"{words} travels with spouse",
            category="context",
        )
    FactFactory(
        subject_id=B, key="b_only_secret", value="Bravo private context", category="context"
    )
    return A, B
