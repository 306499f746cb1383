"""Sentences the desk says must hold for the case in front of them: an error summary names the
problem, a window names its length, a request about a traveller we never held says so."""

from __future__ import annotations

import html
import re

import pytest
from django.utils import timezone

from memoryadmin.facts.actors import Actor
from memoryadmin.privacy import services as privacy
from memoryadmin.staff.roles import PRIVACY_ADMIN
from tests.staff.conftest import make_staff

pytestmark = pytest.mark.django_db


def _text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def test_the_error_summary_says_the_problem_not_where_to_look(client, editor):
    client.force_login(editor)
    response = client.post(
        "/staff/privacy/record/", {"subject_id": "FF-1", "kind": "erasure", "channel": "phone"}
    )
    text = _text(response)
    assert "There is a problem" in text
    assert "the message is beside it" not in text
    assert "There is a problem Received on: This field is required." in text


def test_unusual_access_names_its_window(client, settings):
    settings.STAFF_ACCESS_UNUSUAL_DAYS = 14
    client.force_login(make_staff("priya", PRIVACY_ADMIN))
    text = _text(client.get("/staff/access/"))
    assert "None in the last 14 days." in text and "last days" not in text


def test_an_erasure_request_about_an_unknown_traveller_says_nothing_is_held(client, editor):
    request = privacy.privacy_request_record(
        subject_id="FF-NOBODY-1",
        kind="erasure",
        channel="phone",
        received_at=timezone.now(),
        actor=Actor.staff(editor),
        note="asked by phone",
    )
    client.force_login(editor)
    text = _text(client.get(f"/staff/privacy/requests/{request.number}/"))
    assert "No recipient has been sent" not in text
    assert "We hold no memory of this traveller: there is nothing to erase" in text


ERASING = re.compile(r"^\s*(Erase|Delete|Forget|Reject)", re.I)
CONTROL = re.compile(r"<(button|a)\b([^>]*)>(.*?)</\1>", re.S)


def test_every_erasing_button_has_the_danger_style():
    """A button or button-link whose words erase (Erase, Delete, Forget, Reject) is red, on the
    desk and in the portal, wherever a template draws one."""
    from pathlib import Path

    found = []
    for template in (Path(__file__).resolve().parents[2] / "templates").rglob("*.html"):
        for tag, attributes, words in CONTROL.findall(template.read_text()):
            plain = re.sub(r"\{[%{].*?[%}]\}|<[^>]+>", "", words)
            if tag == "a" and "button" not in attributes:
                continue  # a plain link, not a button
            if ERASING.match(plain) or 'translate "Delete"' in words:
                found.append((template.name, plain.strip()[:30], attributes))
    assert len(found) >= 5
    plain = [f for f in found if "danger" not in f[2] and "button-warning" not in f[2]]
    assert plain == []


def test_the_traveller_page_links_to_their_privacy_requests(client, editor):
    from tests.factories import FactFactory

    FactFactory(subject_id="FF-5151", key="seat_preference", value="Aisle")
    for subject in ("FF-5151", "FF-5252"):
        privacy.privacy_request_record(
            subject_id=subject,
            kind="access",
            channel="phone",
            received_at=timezone.now(),
            actor=Actor.staff(editor),
            note="asked",
        )
    client.force_login(editor)
    page = client.get("/staff/travellers/FF-5151/").content.decode()
    link = re.search(r'href="(/staff/privacy/\?subject_id=[^"]+)">Privacy requests', page)
    assert link is not None
    listed = _text(client.get(html.unescape(link.group(1))))
    assert "FF-5151" in listed and "FF-5252" not in listed
