"""Every staff URL x every kind of visitor: who may read, who may act, and CSRF on every form."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent, MemoryFact
from tests.factories import FactFactory
from tests.staff.conftest import make_staff

pytestmark = pytest.mark.django_db

S = "T-ACCESS"
# Pages every staff role may read.
READ = [
    "/staff/",
    "/staff/travellers/",
    "/staff/travellers/?q=aisle",
    f"/staff/travellers/{S}/",
    f"/staff/travellers/{S}/timeline/",
    f"/staff/travellers/{S}/facts/seat/",
    "/staff/review/",
]
# Pages that show a form to change something (editor and up).
EDIT_PAGES = [
    f"/staff/travellers/{S}/add-fact/",
    f"/staff/travellers/{S}/facts/seat/edit/",
    f"/staff/travellers/{S}/facts/seat/expiry/",
    f"/staff/travellers/{S}/facts/health/reveal/",
    *[
        f"/staff/travellers/{S}/facts/{key}/{action}/"
        for key, action in [
            ("seat", "expire"),
            ("seat", "flag"),
            ("health", "unflag"),
            ("held", "approve"),
            ("held", "reject"),
            ("seat", "delete"),
        ]
    ],
]
POSTS = [
    *EDIT_PAGES,
    f"/staff/travellers/{S}/bulk/",
    f"/staff/travellers/{S}/facts/held/review/",
]


@pytest.fixture
def data():
    FactFactory(subject_id=S, key="seat", value="Prefers aisle seats")
    FactFactory(subject_id=S, key="health", value="Diabetic")
    services.fact_flag_sensitive(subject_id=S, key="health", actor=Actor.system("t"), reason="t")
    FactFactory(subject_id=S, key="held", value="Uses a wheelchair", actor=Actor.agent("host"))
    assert MemoryFact.objects.get(subject_id=S, key="held").status == "pending_review"


def _snapshot():
    return (
        list(MemoryFact.objects.order_by("id").values_list("key", "value", "version", "status")),
        FactEvent.objects.count(),
    )


IDENTITIES = [None, "no_role", "viewer", "editor", "privacy_admin"]


def _client(identity: str | None, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    if identity:
        role = None if identity == "no_role" else identity
        client.force_login(make_staff(f"user-{identity}", role))
    return client


@pytest.mark.parametrize("identity", IDENTITIES)
def test_every_url_answers_each_identity_as_expected(data, identity):
    client = _client(identity)
    before = _snapshot()
    for url in READ + EDIT_PAGES:
        status = client.get(url).status_code
        if identity is None:
            assert status == 302, url
        elif identity == "no_role" or (identity == "viewer" and url in EDIT_PAGES):
            assert status == 403, (identity, url)
        else:
            assert status == 200, (identity, url)
    for url in POSTS:
        status = client.post(url, {}).status_code  # no reason, no data: nothing may change
        if identity is None:
            assert status == 302, url
        elif identity in ("no_role", "viewer"):
            assert status == 403, (identity, url)
        elif url.endswith("/bulk/"):  # nothing selected: back to the list, which says so
            assert status == 302, (identity, url)
        else:
            assert status in (400, 404), (identity, url)
        assert not 200 <= status < 300 or identity in ("editor", "privacy_admin"), url
    assert _snapshot() == before


def test_anonymous_is_sent_to_login_with_next(client):
    response = client.get("/staff/review/")
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/staff/review/"


def test_root_redirects_to_the_dashboard(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/staff/"


@pytest.mark.parametrize("url", POSTS)
def test_every_post_needs_a_csrf_token(data, url):
    client = _client("privacy_admin", csrf=True)
    before = _snapshot()
    response = client.post(url, {"reason": "csrf probe", "version": 1, "keys": ["seat"]})
    assert response.status_code == 403
    assert _snapshot() == before


def test_every_form_on_every_page_carries_a_csrf_token(data):
    client = _client("privacy_admin")
    for url in READ + EDIT_PAGES:
        body = client.get(url).content.decode()
        forms = re.findall(r"<form[^>]*>.*?</form>", body, flags=re.S)
        for form in forms:
            if 'method="post"' in form:
                assert "csrfmiddlewaretoken" in form, (url, form[:200])
