"""One time zone: every staff page (walked from the overview as a privacy admin, following its
links) and every portal page (signed in, in both languages) names the airline's zone
(`TIME_ZONE`) once and shows no other: no other zone name, no other UTC offset, no <time>
with another offset; the exports they link to (CSV, the traveller's JSON) carry its offset."""

from __future__ import annotations

import html
import io
import re
import zipfile
from collections import deque
from urllib.parse import quote

import pytest
from django.test import Client
from django.utils import timezone

from memoryadmin.staff.roles import PRIVACY_ADMIN
from tests.staff.conftest import make_staff
from tests.test_every_page import T, held  # noqa: F401 - the fixture: one traveller's pages

pytestmark = [pytest.mark.django_db]

ZONE = "Asia/Taipei"
OFFSET = "+08:00"
IANA = re.compile(
    r"\b(?:Africa|America|Antarctica|Asia|Atlantic|Australia|Europe|Indian|Pacific|Etc)/[A-Za-z_]+"
)
# A word of its own: "UTC" inside a CSRF token (three times on a page with three forms) is not
# a zone.
UTC = re.compile(r"\bUTC(?:[+-]\d\d:\d\d)?\b")
TIME_ATTR = re.compile(r'datetime="[^"]*T[^"]*?(Z|[+-]\d\d:\d\d)"')
ISO_MOMENT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(Z|[+-]\d\d:\d\d)")
HREF = re.compile(r'href="(/(?:staff|portal)/[^"#]*)"')
# Words the portal would use for another zone, in both its languages.
OTHER_ZONE_WORDS = (
    "Hong Kong time",
    "Japan time",
    "Singapore time",
    "UK time",
    "香港時間",
    "日本時間",
    "新加坡時間",
    "英國時間",
)
SKIPPED = ("/staff/logout", "/portal/sign-out", "/portal/open/")
MOST_PAGES = 400


def _other_zones(body: str) -> list[str]:
    """Every zone the text names or implies that is not the one zone."""
    found = [name for name in IANA.findall(body) if name != ZONE]
    found += [word for word in UTC.findall(body) if word != f"UTC{OFFSET}"]
    found += [f"datetime {o}" for o in TIME_ATTR.findall(body) if o != OFFSET]
    found += [word for word in OTHER_ZONE_WORDS if word in body]
    return found


def _walk(client: Client, start: list[str], prefix: str) -> dict[str, str]:
    """GET every page reachable by links under `prefix` from `start` (query strings dropped
    but for the starting addresses); the HTML of each page that answered 200, by address."""
    seen, pages, queue = set(start), {}, deque(start)
    while queue and len(seen) <= MOST_PAGES:
        path = queue.popleft()
        response = client.get(path)
        if response.status_code != 200:
            continue
        raw = b"".join(response)
        kind = response.get("Content-Type", "")
        if kind.startswith("application/zip"):  # the download package: each member a page
            with zipfile.ZipFile(io.BytesIO(raw)) as package:
                for name in package.namelist():
                    pages[f"{path}#{name}"] = package.read(name).decode("utf-8-sig")
            continue
        body = raw.decode()  # a streamed CSV as a page
        if not kind.startswith("text/html"):
            pages[path] = body
            continue
        pages[path] = body
        for link in HREF.findall(body):
            link = html.unescape(link)
            if "format=csv" not in link:
                link = link.split("?", 1)[0]
            if link.startswith(prefix) and link not in seen and not link.startswith(SKIPPED):
                seen.add(link)
                queue.append(link)
    return pages


def _check(pages: dict[str, str], zone_words: str) -> None:
    problems = {}
    for path, body in pages.items():
        if "<html" in body[:200].lower() or "<!doctype" in body[:50].lower():
            named = body.count("data-zone")
            wrong = _other_zones(body)
            if named != 1 or zone_words not in body or wrong:
                problems[path] = (named, wrong)
        else:  # an export: its moments carry the zone's offset
            wrong = [o for o in ISO_MOMENT.findall(body) if o != OFFSET]
            if wrong:
                problems[path] = (None, wrong[:3])
    assert not problems, problems


def test_every_staff_page_names_the_one_zone_once_and_no_other(held, settings):  # noqa: F811
    settings.TIME_ZONE = ZONE
    client = Client()
    client.force_login(make_staff("zones-admin", PRIVACY_ADMIN))
    at = timezone.localtime(timezone.now()).strftime("%Y-%m-%dT%H:%M")
    starts = [
        "/staff/",
        f"/staff/travellers/{T}/as-of/?at={quote(at)}",
        f"/staff/privacy/requests/{held['request']}/",
        "/staff/access/?format=csv",
    ]
    pages = _walk(client, starts, "/staff/")
    assert len(pages) > 40, sorted(pages)  # the walk reached the pages, not one or two
    _check(pages, f"Times are in {ZONE} (UTC{OFFSET})")


@pytest.mark.parametrize(("language", "words"), [("en", "Taiwan time"), ("zh-hant", "台灣時間")])
def test_every_portal_page_names_the_one_zone_once_and_no_other(
    held,  # noqa: F811
    settings,
    language,
    words,
):
    from memoryadmin.portal.services import portal_link_issue

    settings.TIME_ZONE = ZONE
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    link = portal_link_issue(subject_id=T, issued_by="test")
    assert client.post(f"/portal/open/{quote(link.secret)}").status_code == 302
    pages = _walk(client, ["/portal/", "/portal/download"], "/portal/")
    receipt = client.post("/portal/forget/confirm", {"confirm": "on"})["Location"]
    pages |= _walk(client, [receipt, "/portal/requests"], "/portal/")
    assert len(pages) >= 8, sorted(pages)
    _check(pages, words)


def test_the_check_reads_a_zone_as_a_word_not_letters_inside_a_token():
    token = '<input type="hidden" name="csrfmiddlewaretoken" value="UTCq8UTCz">'
    assert _other_zones(token * 3) == []
    assert _other_zones("<p>Times are in UTC.</p>") == ["UTC"]
    assert _other_zones("<p>(UTC+09:00)</p>") == ["UTC+09:00"]
