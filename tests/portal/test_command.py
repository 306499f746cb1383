"""`manage.py portal_link SUBJECT` prints a working link (make run uses it)."""

from __future__ import annotations

from io import StringIO
from urllib.parse import urlsplit

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

pytestmark = pytest.mark.django_db


def test_the_command_prints_a_link_that_opens_the_portal_once():
    out = StringIO()
    call_command("portal_link", "FF-100231", "--base-url", "http://127.0.0.1:8000/", stdout=out)
    url = out.getvalue().strip()

    assert url.startswith("http://127.0.0.1:8000/portal/open/")
    client = Client()
    assert client.get(urlsplit(url).path).status_code == 200  # the page with the one button
    assert client.post(urlsplit(url).path).status_code == 302
    assert client.get("/portal/").status_code == 200
    assert Client().get(urlsplit(url).path).status_code == 302  # to "already used"


def test_the_command_refuses_a_bad_subject_id():
    with pytest.raises(CommandError):
        call_command("portal_link", "has space", stdout=StringIO())
