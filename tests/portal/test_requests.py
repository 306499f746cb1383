"""The traveller's "Your requests and receipts", the receipt in their words, the readable copy of
their data, "who has looked" by kind of staff, and the small things a first visit trips on."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from memoryadmin.access.selectors import PRIVACY_OFFICER_GROUP
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.services import FactDraft
from memoryadmin.privacy import flows
from memoryadmin.privacy.models import Channel, PrivacyRequest, RequestKind
from memoryadmin.privacy.recipients import webhook_recipient_add
from memoryadmin.privacy.services import privacy_request_record
from memoryadmin.staff.roles import PRIVACY_ADMIN
from tests.factories import FactFactory
from tests.privacy.receiver import Receiver
from tests.staff.conftest import privacy_admin  # noqa: F401
from tests.support.csrf import without_csrf_tokens
from tests.support.package import memory

from .conftest import A, B

pytestmark = pytest.mark.django_db

# Words a traveller must never read: internal kinds, statuses, channels, systems.
INTERNAL = ("rectification", "erasure", "restriction", "in_progress", "completed", "CRM", "sha256")


def text(response) -> str:
    assert response.status_code == 200, response.status_code
    return without_csrf_tokens(response.content.decode())


def _forget(subject_id: str) -> tuple[PrivacyRequest, str]:
    traveller = Actor.customer(subject_id)
    outcome = flows.privacy_forget(subject_id=subject_id, actor=traveller, reason="test")
    request = flows.privacy_verify_erasure(request_id=outcome.request.pk, actor=traveller)
    return request, outcome.receipt.number


@pytest.fixture
def history(db):
    """A: a correction and a download in the portal, a phone request, then forget everything
    (its receipt), then something learned again. B: a forget-everything of their own."""
    FactFactory(subject_id=A, key="seat_preference", value="Aisle")
    flows.privacy_correct(
        subject_id=A,
        key="seat_preference",
        value="Window",
        expected_version=1,
        actor=Actor.customer(A),
        reason="test",
    )
    flows.privacy_export_record(subject_id=A, sha256="ab" * 32, actor=Actor.customer(A))
    phoned = privacy_request_record(
        subject_id=A,
        kind=RequestKind.ACCESS,
        channel=Channel.PHONE,
        received_at=timezone.now() - timedelta(days=2),
        actor=Actor.system("test"),
    )
    erasure, receipt = _forget(A)
    FactFactory(subject_id=A, key="meal_preference", value="Vegetarian")
    FactFactory(subject_id=B, key="seat_preference", value="Bravo")
    _b_request, b_receipt = _forget(B)
    return {"phoned": phoned, "erasure": erasure, "receipt": receipt, "b_receipt": b_receipt}


def test_your_requests_lists_each_with_one_reference_and_its_status_in_words(
    signed_in, history, django_assert_max_num_queries
):
    client = signed_in(A)
    with django_assert_max_num_queries(6):
        body = text(client.get("/portal/requests"))
    main = body.split('<main id="main"', 1)[1]
    titles = re.findall(r"<h2>([^<]+)</h2>", main.split('<ul class="requests">')[1])
    # newest recorded first: forget everything, the phone call (received two days ago, recorded
    # after the portal's two), the download, the correction
    assert titles == ["Forget everything", "A copy of your data", "A copy of your data"] + [
        "A correction",
        "Looking for one you've seen before?",
    ]
    assert main.count(">Done<") == 3 and main.count(">Received<") == 1
    assert "You asked us by phone" in main and "You did this on this site" in main
    # the erasure's one number is its receipt's, linked to the receipt page
    assert history["receipt"] in main and history["erasure"].number not in main
    assert f'href="/portal/receipts/{history["receipt"]}"' in main
    assert history["phoned"].number in main
    assert "Times are in Taiwan time." in main
    for word in INTERNAL:
        assert word not in main, word
    # never another traveller's
    assert history["b_receipt"] not in main


def test_your_requests_in_chinese(signed_in, history):
    body = text(signed_in(A, language="zh-hant").get("/portal/requests"))
    assert "您的申請與確認單" in body and "已完成" in body and "已收到" in body
    assert "您透過電話申請" in body and "時間皆為台灣時間。" in body


def test_a_receipt_is_found_again_by_its_number_and_never_anothers(signed_in, history):
    client = signed_in(A)
    found = client.get("/portal/requests", {"number": history["receipt"].lower()})
    assert found.status_code == 302
    assert found["Location"] == f"/portal/receipts/{history['receipt']}"
    phoned = client.get("/portal/requests", {"number": history["phoned"].number})
    assert phoned.status_code == 302 and phoned["Location"].endswith(
        f"#ref-{history['phoned'].number}"
    )
    # B's receipt, typed into A's page or its address: not found, nothing of B shown
    other = text(client.get("/portal/requests", {"number": history["b_receipt"]}))
    assert "None of your requests has this number" in other
    assert client.get(f"/portal/receipts/{history['b_receipt']}").status_code == 404
    # and B sees only B's
    b_page = text(signed_in(B).get("/portal/requests"))
    assert history["b_receipt"] in b_page and history["receipt"] not in b_page
    assert history["phoned"].number not in b_page


def test_no_requests_yet_is_said_plainly(signed_in):
    FactFactory(subject_id=A, key="seat_preference", value="Aisle")
    body = text(signed_in(A).get("/portal/requests"))
    assert "You haven't asked us for anything yet." in body


@pytest.mark.parametrize(
    ("language", "told", "count"),
    [
        ("en", "Our frequent flyer programme: confirmed", "All 2 things the assistant remembered"),
        ("zh-hant", "我們的會員計畫：已確認", "AI 客服記得的 2 件事"),
    ],
)
def test_the_receipt_names_each_system_in_the_travellers_words(
    signed_in, settings, language, told, count, django_capture_on_commit_callbacks
):
    settings.DEBUG = True  # the receivers are plain http:// on 127.0.0.1
    crm, bare = Receiver().start(), Receiver().start()
    try:
        _, crm.secret = webhook_recipient_add(
            name="CRM",
            url=crm.url,
            events=None,
            actor=Actor.system("test"),
            traveller_name_en="Our frequent flyer programme",
            traveller_name_zh_hant="我們的會員計畫",
        )
        _, bare.secret = webhook_recipient_add(  # no name for travellers was given
            name="DWH-PROD-7", url=bare.url, events=None, actor=Actor.system("test")
        )
        FactFactory(subject_id=A, key="seat_preference", value="Aisle")
        FactFactory(subject_id=A, key="meal_preference", value="Vegetarian")
        client = signed_in(A, language=language)
        with django_capture_on_commit_callbacks(execute=True):  # the dispatch, after commit
            done = client.post("/portal/forget/confirm", {"confirm": "on"})
        body = text(client.get(done["Location"]))
    finally:
        crm.stop()
        bare.stop()
    assert told in body and count in body
    assert "CRM" not in body and "DWH-PROD-7" not in body
    assert ("Another of our systems" if language == "en" else "我們的其他系統") in body
    assert "+08:00" in body  # the traveller's zone in both languages, never UTC
    main = body.split('<main id="main"', 1)[1]
    assert len(re.findall(r"\bP?R-[0-9A-Z]{4}-", main)) == 1  # one reference number, no PR-


def test_forget_everything_is_not_offered_when_nothing_is_remembered(signed_in):
    client = signed_in(A)
    home = text(client.get("/portal/"))
    assert 'href="/portal/forget"' not in home
    forget = text(client.get("/portal/forget"))
    assert "there is nothing to forget" in forget and "All 0" not in forget
    assert 'href="/portal/forget/confirm"' not in forget
    confirm = client.post("/portal/forget/confirm", {"confirm": "on"})
    assert confirm.status_code == 302 and confirm["Location"] == "/portal/forget"
    assert not PrivacyRequest.objects.filter(subject_id=A).exists()


def _learned_with_quote(subject_id: str) -> None:
    services.fact_upsert(
        subject_id=subject_id,
        actor=Actor.extraction("job 1"),
        session_tag="0123456789ab",
        facts=[
            FactDraft("seat_preference", "Prefers aisle seats", evidence="I want the aisle"),
            FactDraft("overnight_flight", "Avoids red-eyes", category="constraint"),
            FactDraft("window_seat_notes", "Likes the left side", category="context"),
        ],
    )
    services.fact_delete(subject_id=subject_id, key="window_seat_notes", actor=Actor.customer(A))


@pytest.mark.parametrize(
    ("language", "words"),
    [
        (
            "en",
            ["Seat preference", "Overnight flights", "You said: “I want the aisle”", "on</li>"],
        ),
        ("zh-hant", ["座位偏好", "紅眼班機", "您說過：「I want the aisle」", "：開啟"]),
    ],
)
def test_the_readable_copy_is_in_the_travellers_language_and_zone(
    signed_in, language, words, django_assert_max_num_queries
):
    _learned_with_quote(A)
    FactFactory(subject_id=B, key="seat_preference", value="Bravo secret seat")
    client = signed_in(A, language=language)
    with django_assert_max_num_queries(10):
        body = text(client.get("/portal/your-data"))
    for word in words:
        assert word in body, word
    assert "seat_preference" not in body and "overnight_flight" not in body  # labels, not keys
    assert "+08:00" in body and "+00:00" not in body
    assert "Bravo" not in body
    assert '<meta name="viewport"' in body and "@media print" not in body  # CSS is in the file
    assert 'href="/portal/download"' in body


def test_the_json_member_names_are_the_same_in_every_language(signed_in):
    _learned_with_quote(A)
    signed_in(A).get("/portal/download")  # a request on record, so both list one
    english = memory(signed_in(A).get("/portal/download").content)
    chinese = memory(signed_in(A, language="zh-hant").get("/portal/download").content)

    def names(value, path=""):
        if isinstance(value, dict):
            return {f"{path}/{k}" for k in value} | {
                n for k, v in value.items() for n in names(v, f"{path}/{k}")
            }
        if isinstance(value, list):
            return {n for item in value for n in names(item, f"{path}[]")}
        return set()

    assert names(english) == names(chinese)
    assert set(english["switches"]) == {"learn_from_conversations", "use_memory"}
    assert chinese["switches"]["use_memory"]["label"] == "讓 AI 客服使用記憶"
    whats = [entry["what"] for entry in chinese["history"]]
    assert "開始記得" in whats and "created" not in whats  # words, not the staff pages' labels


def test_who_has_looked_counts_each_kind_of_staff_per_day(signed_in, db):
    from django.contrib.auth.models import Group

    from memoryadmin.access.models import StaffAccess
    from tests.factories import UserFactory

    assert PRIVACY_OFFICER_GROUP == PRIVACY_ADMIN  # access names the group staff.roles defines
    agent = UserFactory(username="agent-ann")
    officer = UserFactory(username="officer-olu")
    officer.groups.add(Group.objects.get_or_create(name=PRIVACY_ADMIN)[0])
    now = timezone.now()
    for user, days_ago in ((agent, 0), (agent, 0), (agent, 0), (officer, 0), (officer, 3)):
        StaffAccess.objects.create(
            at=now - timedelta(days=days_ago),
            staff_user_id=user.pk,
            staff_username=user.username,
            subject_id=A,
            what="traveller",
        )
    StaffAccess.objects.create(  # a search that listed them is not a look
        at=now, staff_user_id=agent.pk, staff_username="agent-ann", subject_id=A, what="search"
    )
    body = text(signed_in(A).get("/portal/looked"))
    days = re.findall(r"<li>(.*?)</li>", body.split('id="looked-days"')[1], re.S)
    assert len(days) == 2
    assert "Support agents looked 3 times." in days[0]
    assert "A privacy officer looked once." in days[0]
    assert "A privacy officer looked once." in days[1] and "Support" not in days[1]
    assert "agent-ann" not in body and "officer-olu" not in body


def test_the_card_says_delete_and_why_and_the_small_fixes(signed_in, issue_link, client):
    _learned_with_quote(A)
    body = text(signed_in(A).get("/portal/"))
    assert "Delete this" in body and "Don't use this" not in body
    assert '<p class="why-title">Why the assistant knows this</p>' in body
    assert "You said on" in body and "I want the aisle" in body
    assert '<h3 class="topic">Seat preference</h3>' in body
    assert "About you and your trips" not in body  # its one fact was deleted: group hidden
    assert 'rel="icon"' in body
    opened = client.get(f"/portal/open/{issue_link(A)}").content.decode()
    assert "<title>Your travel memory</title>" in opened  # not "… – Your travel memory" twice


def test_staff_give_each_recipient_its_names_for_travellers(client, privacy_admin):  # noqa: F811
    """The recipients form (and the shell command) take what a traveller's receipt says."""
    from django.core.management import call_command

    from memoryadmin.privacy.models import WebhookRecipient

    client.force_login(privacy_admin)
    response = client.post(
        "/staff/privacy/webhooks/",
        {
            "name": "CRM",
            "traveller_name_en": "Our frequent flyer programme",
            "traveller_name_zh_hant": "我們的會員計畫",
            "url": "https://crm.example/hook",
            "events": ["memory.subject.erased"],
            "reason": "DPA-7",
        },
    )
    assert response.status_code == 302
    crm = WebhookRecipient.objects.get(name="CRM")
    assert (crm.traveller_name_en, crm.traveller_name_zh_hant) == (
        "Our frequent flyer programme",
        "我們的會員計畫",
    )
    call_command(
        "webhook_recipient",
        "add",
        "DWH",
        "https://dwh.example/hook",
        "--traveller-name-en",
        "Our reports",
        "--traveller-name-zh-hant",
        "我們的報表",
    )
    dwh = WebhookRecipient.objects.get(name="DWH")
    assert (dwh.traveller_name_en, dwh.traveller_name_zh_hant) == ("Our reports", "我們的報表")


def test_the_readable_copy_of_nothing_says_so(signed_in):
    body = text(signed_in("FF-NOBODY").get("/portal/your-data"))
    assert "The assistant doesn't remember anything about you right now." in body
    assert "Nothing has changed yet." in body
    assert "Learn from my conversations: on" in body


@pytest.mark.parametrize(("language", "about"), [("en", "About"), ("zh-hant", "相關資料")])
def test_a_restriction_names_its_fact_by_topic(signed_in, language, about):
    """ "Stop using one thing while it is checked" says which thing, as the traveller knows it
    (its topic, never its key); once the fact is deleted, nothing names it."""
    FactFactory(subject_id=A, key="seat_preference", value="Middle seat, always")
    FactFactory(subject_id=A, key="meal_preference", value="Vegetarian meals")
    client = signed_in(A, language=language)
    client.post("/portal/facts/seat_preference/stop-using", {"note": ""})
    page = text(client.get("/portal/requests"))
    topic = re.findall(r"<dd data-topic>([^<]*)</dd>", page)
    assert topic == ["Seat preference" if language == "en" else "座位偏好"]
    assert f"<dt>{about}</dt>" in page and "seat_preference" not in page
    client.post("/portal/facts/seat_preference/delete")
    assert "data-topic" not in text(client.get("/portal/requests"))
