"""No cross-traveller access: with a portal session for traveller A, no request of any kind
reads or changes anything of traveller B (changed keys, posted forms, guessed URLs, a traveller
id smuggled into a form or the query string, replayed links, another traveller's receipt)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent, MemoryFact, Subject
from memoryadmin.portal.auth import COOKIE_NAME
from tests.factories import FactFactory
from tests.support.package import members

from .conftest import A, B, open_url

pytestmark = pytest.mark.django_db

B_VALUES = (
    "Bravo aisle seat",
    "Bravo avoids red-eyes",
    "Bravo travels with spouse",
    "Bravo private context",
)


def b_state() -> tuple:
    return (
        sorted(MemoryFact.objects.filter(subject_id=B).values_list("key", "value", "version")),
        FactEvent.objects.filter(subject_id=B).count(),
        list(
            Subject.objects.filter(subject_id=B).values_list(
                "purge_generation", "memory_paused", "memory_use_paused"
            )
        ),
    )


def _text(response) -> str:
    """A page's text, or every member of the download package."""
    if response.get("Content-Type") == "application/zip":
        return "".join(member.decode() for member in members(response.content).values())
    return response.content.decode()


def assert_no_b(response) -> None:
    # The language switcher sends the visitor back to the address they typed: not B's data.
    body = re.sub(r'<input type="hidden" name="next" value="[^"]*">', "", _text(response))
    for value in B_VALUES:
        assert value not in body
    assert B not in body


SMUGGLED = {"subject_id": B, "subject": B, "traveller": B, "subject_id[]": B}


def every_request(receipt_of_b: str):
    """Each portal URL and form, aimed at B's facts in every way a URL or form can be."""
    keys = [
        "b_only_secret",
        "seat_preference",
        "B_ONLY_SECRET",
        "b_only_secret/",
        f"{B}/seat_preference",
        "..%2Fb_only_secret",
    ]
    for key in keys:
        yield "get", f"/portal/facts/{key}/change", None
        yield "post", f"/portal/facts/{key}/change", {"value": "Hijacked", "version": 1, **SMUGGLED}
        yield "get", f"/portal/facts/{key}/delete", None
        yield "post", f"/portal/facts/{key}/delete", SMUGGLED
    query = f"?subject_id={B}&subject={B}"
    for url in ("/portal/", "/portal/download", "/portal/forget", "/portal/forget/confirm"):
        yield "get", url + query, None
    yield "post", "/portal/choices" + query, {"learn": "", "use": "", **SMUGGLED}
    yield "post", "/portal/forget/confirm" + query, {"confirm": "on", **SMUGGLED}
    yield "get", f"/portal/receipts/{receipt_of_b}", None
    yield "get", f"/portal/subjects/{B}/", None
    yield "get", f"/portal/{B}", None


def test_a_session_for_a_never_touches_b(signed_in, two_travellers):
    receipt_of_b = services.subject_forget(subject_id="FF-C-0003", actor=Actor.customer("x"))
    b_receipt = services.subject_forget(subject_id=B, actor=Actor.customer(B))
    # B's facts again, after B's own clear, so there is something of B's to protect
    for key, value, category in (
        ("seat_preference", B_VALUES[0], "preference"),
        ("overnight_flight", B_VALUES[1], "constraint"),
        ("travel_party", B_VALUES[2], "context"),
        ("b_only_secret", B_VALUES[3], "context"),
    ):
        FactFactory(subject_id=B, key=key, value=value, category=category)
    before = b_state()
    client = signed_in(A)

    for method, url, data in [
        *every_request(b_receipt.number),
        ("get", f"/portal/receipts/{receipt_of_b.number}", None),
    ]:
        response = getattr(client, method)(url, data) if data else getattr(client, method)(url)
        assert response.status_code < 500, url
        assert_no_b(response)
        if response.status_code == 302:
            assert_no_b(client.get(response["Location"]))
        assert b_state() == before, f"{method.upper()} {url} changed B"

    assert not MemoryFact.objects.filter(value="Hijacked").exists()


def test_the_export_holds_only_the_sessions_traveller(signed_in, two_travellers):
    response = signed_in(A).get(f"/portal/download?subject_id={B}")
    assert_no_b(response)
    assert "Alpha aisle seat" in _text(response)


def test_a_link_for_a_opens_only_a_even_for_a_browser_signed_in_as_b(
    signed_in, issue_link, two_travellers
):
    client = signed_in(B)
    client.post(open_url(issue_link(A)))

    body = client.get("/portal/").content.decode()

    assert "Alpha aisle seat" in body
    assert_no_b(client.get("/portal/"))


def test_a_replayed_link_does_not_reopen_a_session(signed_in, issue_link, two_travellers):
    secret = issue_link(B)
    assert Client().post(open_url(secret)).status_code == 302
    client = signed_in(A)

    replay = client.get(open_url(secret), follow=True)

    assert replay.status_code == 410
    assert_no_b(client.get("/portal/"))
    assert b"Alpha aisle seat" in client.get("/portal/").content


def test_a_forged_session_cookie_is_no_session(two_travellers):
    client = Client()
    client.cookies[COOKIE_NAME] = B
    assert client.get("/portal/").status_code == 401
