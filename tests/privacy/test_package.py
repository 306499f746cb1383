"""The download is a package: the portal's "Download my data" and staff's export of an access
request give the same ZIP (memory.json with its schema version, five CSVs a spreadsheet reads,
a self-contained index.html), in the traveller's language, holding only that traveller, with
erased and redacted values shown as such; completing the request records the package's
SHA-256."""

from __future__ import annotations

import hashlib
import re
import zipfile
from io import BytesIO

import pytest
from django.utils import timezone

from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactEvent
from memoryadmin.privacy import clock
from memoryadmin.privacy.models import PrivacyRequest, RequestStatus
from memoryadmin.privacy.package import SCHEMA_VERSION, traveller_package
from memoryadmin.privacy.services import privacy_request_record
from tests.factories import FactFactory
from tests.portal.conftest import A, B
from tests.staff.conftest import editor  # noqa: F401
from tests.support.package import BOM, members, memory, rows

pytestmark = pytest.mark.django_db

CSVS = ("facts.csv", "history.csv", "uses.csv", "requests.csv", "looked.csv")
HOSTILE = '=HYPERLINK("http://evil.example/x","Click")'


def _edited_once(client) -> None:
    """A's seat: remembered as "Window seat please", then changed in the portal."""
    FactFactory(subject_id=A, key="seat_preference", value="Window seat please")
    response = client.post(
        "/portal/facts/seat_preference/change", {"value": "Aisle seat, 靠走道", "version": 1}
    )
    assert response.status_code == 302, response.content[:300]


def test_the_download_is_a_zip_of_json_csvs_and_a_self_contained_page(signed_in):
    client = signed_in(A)
    _edited_once(client)

    response = client.get("/portal/download")

    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    day = timezone.localdate().isoformat()
    assert response["Content-Disposition"] == f'attachment; filename="memory-{A}-{day}.zip"'
    files = members(response.content)
    assert sorted(files) == sorted([*CSVS, "index.html", "memory.json"])
    data = memory(response.content)
    assert data["schema_version"] == SCHEMA_VERSION == 1 and data["traveller"] == A
    assert [(f["key"], f["value"]) for f in data["facts"]] == [
        ("seat_preference", "Aisle seat, 靠走道")
    ]
    for name in CSVS:
        assert files[name].startswith(BOM), name
    facts = rows(response.content, "facts.csv")
    assert facts[0][:2] == ["Topic", "What the assistant remembers"]
    assert "Aisle seat, 靠走道" in facts[1]
    history = rows(response.content, "history.csv")
    assert history[0] == ["When", "Topic", "What happened", "Before", "After", "Why"]
    changed = [row for row in history[1:] if row[3] == "Window seat please"]
    assert changed and changed[0][4] == "Aisle seat, 靠走道"  # the earlier value and the current
    page = files["index.html"].decode("utf-8")
    assert "<style>" in page and "<script" not in page.lower()
    assert not re.search(r"(src|href)\s*=|https?://|@import|url\(", page, re.IGNORECASE)
    assert "Aisle seat, 靠走道" in page and "Window seat please" in page


def test_chinese_headers_and_values_read_back_with_csv(signed_in):
    client = signed_in(A, language="zh-hant")
    _edited_once(client)

    body = client.get("/portal/download").content

    facts = rows(body, "facts.csv")
    assert facts[0][:2] == ["主題", "AI 客服記得的事"]
    assert "Aisle seat, 靠走道" in facts[1]
    history = rows(body, "history.csv")
    assert history[0][:5] == ["時間", "主題", "發生了什麼", "修改前", "修改後"]
    assert rows(body, "requests.csv")[0][0] == "編號"
    assert rows(body, "looked.csv")[0][0] == "日期"
    page = members(body)["index.html"].decode("utf-8")
    assert '<html lang="zh-hant">' in page and "這次下載裡有什麼" in page
    assert memory(body)["language"] == "zh-hant"


def test_a_formula_or_markup_in_a_value_is_neutralised(signed_in):
    FactFactory(subject_id=A, key="meal_preference", value=HOSTILE)
    FactFactory(subject_id=A, key="travel_party", value="<script>alert(1)</script> with kids")

    body = signed_in(A).get("/portal/download").content

    cells = [cell for row in rows(body, "facts.csv") for cell in row]
    assert "'" + HOSTILE in cells and HOSTILE not in cells
    history = [cell for row in rows(body, "history.csv") for cell in row]
    assert "'" + HOSTILE in history and HOSTILE not in history
    page = members(body)["index.html"].decode("utf-8")
    assert "<script" not in page and "&lt;script&gt;" in page
    assert 'href="http' not in page  # the hostile link is text, escaped
    assert memory(body)["facts"][0]["value"] in (HOSTILE, "<script>alert(1)</script> with kids")


def test_a_traveller_never_gets_another_travellers_data(signed_in, two_travellers):
    body = signed_in(A).get(f"/portal/download?subject_id={B}").content

    everything = b"".join(members(body).values()).decode("utf-8")
    assert "Bravo" not in everything and B not in everything
    assert "Alpha aisle seat" in everything


def _redact_first_version(how: str) -> None:
    """Version 1 of A's seat marked redacted, as a privacy admin's redaction marks it: each
    snapshot of it blanked and stamped, or only its event stamped with its snapshots left
    whole (the package must go by the mark, not by what the rows happen to hold)."""
    events = FactEvent.objects.filter(subject_id=A, key="seat_preference").order_by("id")
    now = timezone.now()
    if how == "event":
        FactEvent.objects.filter(pk=events[0].pk).update(redacted_at=now)
        return
    for event in events:
        for side in ("before", "after"):
            shot = getattr(event, side)
            if shot and shot.get("version") == 1:
                setattr(event, side, {**shot, "value": None, "redacted_at": now.isoformat()})
        FactEvent.objects.filter(pk=event.pk).update(before=event.before, after=event.after)


@pytest.mark.parametrize("how", ["snapshot", "event"])
def test_erased_facts_and_redacted_versions_show_as_such_never_their_values(signed_in, how):
    client = signed_in(A)
    FactFactory(subject_id=A, key="meal_preference", value="Erased meal Kx9")
    assert client.post("/portal/facts/meal_preference/delete").status_code == 302
    _edited_once(client)
    _redact_first_version(how)

    body = client.get("/portal/download").content

    everything = b"".join(members(body).values()).decode("utf-8")
    assert "Erased meal Kx9" not in everything and "meal_preference" not in everything
    assert "Window seat please" not in everything
    history = rows(body, "history.csv")
    assert any(row[3:5] == ["erased", "erased"] for row in history)
    assert ["", "redacted"] in [row[3:5] for row in history]  # version 1 written
    assert ["redacted", "Aisle seat, 靠走道"] in [row[3:5] for row in history]  # then replaced
    assert "Aisle seat, 靠走道" in rows(body, "facts.csv")[1]  # the current value is unchanged
    changed = [e for e in memory(body)["history"] if e.get("fact") == "seat_preference"]
    assert changed[-1]["before"]["value"] is None and changed[-1]["before"]["redacted_at"]


def test_the_same_data_at_the_same_moment_gives_the_same_bytes(db):
    FactFactory(subject_id=A, key="seat_preference", value="Window seat please")
    now = timezone.now()
    first = traveller_package(A, language="en", now=now)
    second = traveller_package(A, language="en", now=now)
    assert first.body == second.body and first.sha256 == second.sha256
    with zipfile.ZipFile(BytesIO(first.body)) as archive:
        infos = archive.infolist()
    assert [info.filename for info in infos] == sorted(info.filename for info in infos)
    assert {info.date_time for info in infos} == {(1980, 1, 1, 0, 0, 0)}


def test_staff_export_is_the_same_package_and_completing_records_its_sha256(
    client,
    signed_in,
    editor,  # noqa: F811
):
    portal = signed_in(A)
    _edited_once(portal)
    from_portal = portal.get("/portal/download").content
    found = privacy_request_record(
        subject_id=A,
        kind="access",
        channel="phone",
        received_on=clock.today(),
        actor=Actor.staff(editor),
    )
    client.force_login(editor)
    page = client.get(f"/staff/privacy/requests/{found.number}/").content.decode()
    assert 'name="language"' in page and 'value="zh-hant"' in page

    chinese = client.post(
        f"/staff/privacy/requests/{found.number}/export/", {"language": "zh-hant"}
    )
    assert rows(chinese.content, "facts.csv")[0][0] == "主題"
    response = client.post(f"/staff/privacy/requests/{found.number}/export/", {"language": "en"})

    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"].startswith(f'attachment; filename="memory-{A}-')
    assert sorted(members(response.content)) == sorted(members(from_portal))
    # the same facts (the times are in the zone of the page that asked: staff's, the portal's)
    shown = [row[:3] for row in rows(response.content, "facts.csv")]
    assert shown == [row[:3] for row in rows(from_portal, "facts.csv")]
    sha256 = hashlib.sha256(response.content).hexdigest()
    done = client.post(f"/staff/privacy/requests/{found.number}/complete/", {"note": "sent"})
    assert done.status_code == 302
    found = PrivacyRequest.objects.get(pk=found.pk)
    assert found.status == RequestStatus.COMPLETED and found.evidence["sha256"] == sha256
    shown = client.get(f"/staff/privacy/requests/{found.number}/").content.decode()
    assert f'<code data-evidence="sha256">{sha256}</code>' in shown


def test_the_portals_download_closes_its_request_with_the_packages_sha256(signed_in):
    response = signed_in(A).get("/portal/download")
    request = PrivacyRequest.objects.get(subject_id=A, kind="access")
    assert request.evidence["sha256"] == hashlib.sha256(response.content).hexdigest()


def test_days_are_days_and_moments_have_their_minute():
    from memoryadmin.privacy.package_tables import shown_time

    assert shown_time("2027-01-07") == "2027-01-07"
    assert shown_time("2026-12-07T21:34:05.123+08:00") == "2026-12-07 21:34"
    assert shown_time(None) == ""


def test_each_use_and_each_staff_look_is_a_row(signed_in, client, editor):  # noqa: F811
    from memoryadmin.usage.services import TurnUse, uses_record

    FactFactory(subject_id=A, key="seat_preference", value="Window seat please")
    FactFactory(subject_id=A, key="meal_preference", value="Vegetarian Kx9")
    uses_record(
        subject_id=A,
        uses=[
            TurnUse("s1", "t1", injected=["seat_preference", "meal_preference"], recalled=[]),
            TurnUse("s1", "t2", injected=[], recalled=["seat_preference"]),
        ],
    )
    portal = signed_in(A)
    assert portal.post("/portal/facts/meal_preference/delete").status_code == 302
    client.force_login(editor)
    assert client.get(f"/staff/travellers/{A}/").status_code == 200  # a support agent looks

    body = portal.get("/portal/download").content

    uses = rows(body, "uses.csv")
    assert uses[0] == ["When", "Topic", "How the assistant used it", "Version"]
    hows = sorted((row[1], row[2]) for row in uses[1:])
    assert hows == [
        ("Seat preference", "given to the assistant as the conversation started"),
        ("Seat preference", "looked up by the assistant during the conversation"),
        ("a fact that was erased", "given to the assistant as the conversation started"),
    ]
    seat = next(row for row in rows(body, "facts.csv")[1:] if row[0] == "Seat preference")
    assert seat[7] == "1"  # two uses, in one conversation
    looked = rows(body, "looked.csv")
    assert looked[0] == ["Day", "Times support agents looked", "Times privacy officers looked"]
    assert looked[1][1:] == ["1", "0"]
    assert "Vegetarian Kx9" not in b"".join(members(body).values()).decode()


def test_the_file_name_holds_the_id_and_the_day_and_nothing_a_path_could_use():
    from datetime import UTC, datetime

    from memoryadmin.privacy.package import package_filename

    moment = datetime(2026, 12, 7, 3, 0, tzinfo=UTC)
    assert package_filename("FF-100231", now=moment).startswith("memory-FF-100231-2026-12-0")
    assert package_filename('../a"b/c', now=moment).startswith("memory-.._a_b_c-")
