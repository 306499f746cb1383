"""The staff access record: every staff read of a traveller is one row, written after the
response in one INSERT, append-only, kept STAFF_ACCESS_RETENTION_DAYS, never a value."""

from __future__ import annotations

import subprocess
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memoryadmin.access import selectors, services, writer
from memoryadmin.access.models import AppendOnly, StaffAccess
from memoryadmin.facts import services as fact_services
from memoryadmin.facts.actors import Actor
from tests.factories import FactFactory

pytestmark = pytest.mark.django_db

S = "T-LOOKED-AT"
VALUE = "Allergic to peanuts zq7"


@pytest.fixture
def traveller():
    FactFactory(subject_id=S, key="seat", value="Prefers aisle seats")
    FactFactory(subject_id=S, key="allergy", value=VALUE)
    fact_services.fact_flag_sensitive(
        subject_id=S, key="allergy", actor=Actor.system("t"), reason="t"
    )


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_each_staff_read_of_a_traveller_is_one_row(traveller, editor):
    client = _client(editor)
    before = StaffAccess.objects.count()
    assert client.get(f"/staff/travellers/{S}/").status_code == 200
    assert client.get(f"/staff/travellers/{S}/timeline/").status_code == 200
    assert client.get(f"/staff/travellers/{S}/facts/seat/").status_code == 200
    response = client.post(f"/staff/travellers/{S}/facts/allergy/reveal/", {"reason": "call"})
    assert response.status_code == 302
    assert client.get("/staff/travellers/?q=aisle").status_code == 200
    rows = list(StaffAccess.objects.order_by("id"))[before:]
    assert [row.what for row in rows] == [
        "traveller",
        "timeline",
        "fact_history",
        "reveal",
        "search",
    ]
    for row in rows:
        assert (row.staff_username, row.subject_id, row.address) == ("eddie", S, "127.0.0.1")
        assert row.staff_user_id == editor.pk


def test_a_privacy_request_page_and_an_export_made_for_them_are_rows(traveller, editor):
    from memoryadmin.privacy import services as privacy

    found = privacy.privacy_request_record(
        subject_id=S,
        kind="access",
        channel="phone",
        received_at=timezone.now(),
        actor=Actor.staff(editor),
        note="called in",
    )
    client = _client(editor)
    before = StaffAccess.objects.count()
    assert client.get(f"/staff/privacy/requests/{found.number}/").status_code == 200
    response = client.post(f"/staff/privacy/requests/{found.number}/export/")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    rows = list(StaffAccess.objects.order_by("id"))[before:]
    assert [(row.what, row.subject_id) for row in rows] == [
        ("privacy_request", S),
        ("export", S),
    ]


def test_a_missing_traveller_or_a_refused_read_is_not_recorded(traveller, editor, no_role):
    assert _client(editor).get("/staff/travellers/NOBODY/").status_code == 404
    assert _client(no_role).get(f"/staff/travellers/{S}/").status_code == 403
    assert not StaffAccess.objects.exclude(what="sign_in").exists()


def test_the_rows_are_written_after_the_response_in_one_insert(traveller, editor):
    client = _client(editor)
    with CaptureQueriesContext(connection) as queries:
        client.get("/staff/travellers/?q=T-LOOKED")
    inserts = [q["sql"] for q in queries if 'INSERT INTO "staff_access"' in q["sql"]]
    assert len(inserts) == 1
    # the INSERT is the last statement: it ran after the page was rendered
    assert "staff_access" in queries[-1]["sql"]
    assert StaffAccess.objects.filter(what="search", subject_id=S).count() == 1


def test_query_counts_stay_fixed_with_recording_on(
    traveller, editor, django_assert_max_num_queries
):
    client = _client(editor)
    client.get(f"/staff/travellers/{S}/")
    for index in range(30):
        FactFactory(subject_id=S, key=f"more-{index}", value=f"fact {index}")
    with django_assert_max_num_queries(13):  # 12 before the record, + its one INSERT
        assert client.get(f"/staff/travellers/{S}/").status_code == 200
    with django_assert_max_num_queries(13):
        assert client.get(f"/staff/travellers/{S}/timeline/").status_code == 200


def test_the_record_is_append_only_in_the_database(editor):
    writer.record(
        staff_user_id=editor.pk,
        staff_username="eddie",
        what="traveller",
        subject_ids=[S],
        address="127.0.0.1",
    )
    assert writer.flush() == 1
    row = StaffAccess.objects.get()
    with pytest.raises(AppendOnly):
        row.save()
    for statement in ("UPDATE staff_access SET staff_username = 'x'", "DELETE FROM staff_access"):
        with (
            pytest.raises(DatabaseError, match="staff access"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(statement)
    assert StaffAccess.objects.get().staff_username == "eddie"


def test_the_sweep_removes_only_rows_past_retention(editor):
    now = timezone.now()
    old = now - timedelta(days=settings.STAFF_ACCESS_RETENTION_DAYS + 1)
    recent = now - timedelta(days=settings.STAFF_ACCESS_RETENTION_DAYS - 1)
    StaffAccess.objects.bulk_create(
        [
            StaffAccess(at=old, staff_username="eddie", subject_id=S, what="traveller"),
            StaffAccess(at=recent, staff_username="eddie", subject_id=S, what="traveller"),
        ]
    )
    assert services.access_sweep(actor="test") == 1
    assert list(StaffAccess.objects.values_list("at", flat=True)) == [recent]
    assert services.access_sweep(actor="test") == 0


def test_unusual_access_lists_staff_who_opened_many_travellers_in_an_hour(
    settings, editor, privacy_admin
):
    settings.STAFF_ACCESS_UNUSUAL_PER_HOUR = 3
    now = timezone.now()
    StaffAccess.objects.bulk_create(
        [
            StaffAccess(at=now, staff_username="eddie", subject_id=f"T-{n}", what="traveller")
            for n in range(4)
        ]
        + [
            StaffAccess(at=now, staff_username="vera", subject_id=f"T-{n}", what="search")
            for n in range(10)
        ]
        + [
            StaffAccess(at=now, staff_username="sam", subject_id="T-1", what="timeline")
            for _ in range(10)
        ]
    )
    unusual = selectors.unusual_access()
    assert [(row["staff_username"], row["travellers"]) for row in unusual] == [("eddie", 4)]
    page = _client(privacy_admin).get("/staff/").content.decode()
    assert "Unusual access" in page and "eddie" in page


def test_privacy_admins_filter_and_export_the_record(privacy_admin, editor, viewer):
    now = timezone.now()
    StaffAccess.objects.bulk_create(
        [
            StaffAccess(
                at=now,
                staff_username="eddie",
                subject_id=S,
                what="traveller",
                address="10.0.0.8",
                login_method="sso",
            ),
            StaffAccess(
                at=now - timedelta(days=3),
                staff_username="vera",
                subject_id="=cmd|x",
                what="timeline",
            ),
        ]
    )
    client = _client(privacy_admin)
    page = client.get("/staff/access/", {"staff": "eddie"})
    assert page.status_code == 200
    body = page.content.decode()
    assert S in body and "=cmd|x" not in body
    day = timezone.localdate(now - timedelta(days=3)).isoformat()
    body = client.get("/staff/access/", {"since": day, "until": day}).content.decode()
    assert "=cmd|x" in body and S not in body
    csv = client.get("/staff/access/", {"format": "csv"})
    text = b"".join(csv.streaming_content).decode()
    assert text.splitlines()[0] == "at_utc,staff,traveller,what,sign_in,address"
    assert "'=cmd|x" in text and f"eddie,{S},traveller,sso,10.0.0.8" in text
    bad = client.get("/staff/access/", {"since": "2026-05-02", "until": "2026-05-01"})
    assert bad.status_code == 400 and b"before the start date" in bad.content
    assert client.get("/staff/access/", {"since": "not a day"}).status_code == 400
    assert _client(editor).get("/staff/access/").status_code == 403
    assert _client(viewer).get("/staff/access/").status_code == 403


def test_the_traveller_sees_when_support_looked_in_both_languages(
    traveller, editor, privacy_admin, signed_in
):
    _client(editor).get(f"/staff/travellers/{S}/timeline/")
    _client(editor).get(f"/staff/travellers/{S}/timeline/")
    StaffAccess.objects.create(  # a privacy officer's look, the same day
        at=timezone.now(),
        staff_user_id=privacy_admin.pk,
        staff_username=privacy_admin.username,
        subject_id=S,
        what="privacy_request",
    )
    StaffAccess.objects.create(
        at=timezone.now(), staff_username="x", subject_id="T-OTHER", what="traveller"
    )
    english = signed_in(S).get("/portal/looked").content.decode()
    assert "Support agents looked 2 times." in english
    assert "A privacy officer looked once." in english
    assert "eddie" not in english and privacy_admin.username not in english
    chinese = signed_in(S, language="zh-hant").get("/portal/looked").content.decode()
    assert "客服人員查看了 2 次。" in chinese and "隱私專員查看了 1 次。" in chinese
    assert "No one from our support team" in signed_in("T-2").get("/portal/looked").content.decode()


@pytest.mark.django_db(transaction=True)  # committed, so that pg_dump sees it
def test_forget_everything_keeps_the_access_rows_and_no_value_or_key_is_left(
    traveller, editor, tmp_path
):
    client = _client(editor)
    client.get(f"/staff/travellers/{S}/")
    client.post(f"/staff/travellers/{S}/facts/allergy/reveal/", {"reason": "call"})
    fact_services.subject_forget(subject_id=S, actor=Actor.customer(S), reason="forget")
    assert StaffAccess.objects.filter(subject_id=S).count() == 2
    db = settings.DATABASES["default"]
    dump = subprocess.run(
        [
            "pg_dump",
            "-h",
            db["HOST"] or "127.0.0.1",
            "-p",
            str(db["PORT"] or 5432),
            "-U",
            db["USER"],
            "--data-only",
            db["NAME"],
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "COPY public.staff_access" in dump and S in dump  # the rows are there
    assert VALUE not in dump and "allergy" not in dump
