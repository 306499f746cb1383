"""Redacting one past version of a fact, through the pages as people use them: a privacy admin
redacts version 1 of a fact with two versions from its history page; its value and quote leave
the database (pg_dump), every page that showed them says "redacted", the current value and
both versions' rows stay. Editors are offered no control and refused by the server."""

from __future__ import annotations

import json
from datetime import datetime
from urllib.parse import quote

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from memoryadmin.api.tokens import token_issue
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.errors import FactNotFound, FactStateError
from memoryadmin.facts.models import EventAction, FactEvent, MemoryFact
from memoryadmin.facts.services import FactDraft
from memoryadmin.facts.validation import session_tag
from memoryadmin.portal.services import portal_link_issue
from memoryadmin.usage.services import TurnUse, uses_record
from tests.facts.test_erasure import _event_table_updates
from tests.support.package import members, memory
from tests.support.pgdump import pg_dump_text

T = "T-REDACT-1"
KEY = "seat_preference"
OLD = "Window seat beside my colleague Jonas Quill"
QUOTE = "put me next to Jonas Quill please"
NEW = "Window seat, rows 10 to 20"
FACT = f"/staff/travellers/{T}/facts/{KEY}/"
TURN = f"/staff/travellers/{T}/turns/{session_tag('sess-X')}/t-1/"


def redact_url(version: int) -> str:
    return f"{FACT}versions/{version}/redact/"


def _a_fact_with_two_versions() -> tuple[APIClient, datetime]:
    """Version 1 written by the agent through the API with an Idempotency-Key (its reply is
    stored) and a quote, used in one turn; version 2 the traveller's correction. Returns the
    agent and a moment between the two versions."""
    _token, secret = token_issue(name="agent-host", scopes=("memory:read", "memory:write"))
    agent = APIClient()
    agent.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    written = agent.put(
        f"/api/v1/subjects/{quote(T)}/facts",
        {"facts": [{"key": KEY, "value": OLD, "evidence": QUOTE}]},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k-1",
    )
    assert written.status_code in (200, 201), written.content
    uses_record(
        subject_id=T,
        uses=[TurnUse("sess-X", "t-1", injected=[{"key": KEY, "version": 1}], recalled=[])],
    )
    between = timezone.now()
    services.fact_upsert(subject_id=T, actor=Actor.customer(T), facts=[FactDraft(KEY, NEW)])
    return agent, between


def _portal(language: str) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    secret = portal_link_issue(subject_id=T, issued_by="test").secret
    assert client.post(f"/portal/open/{secret}").status_code == 302
    return client


@pytest.mark.django_db(transaction=True)  # pg_dump reads committed data only
def test_a_privacy_admin_redacts_version_one_and_its_words_leave_the_database(
    client, privacy_admin
):
    agent, between = _a_fact_with_two_versions()
    dump = pg_dump_text()
    assert OLD in dump and QUOTE in dump  # the proof below can fail

    client.force_login(privacy_admin)
    page = client.get(FACT).content.decode()
    assert page.count("Redact this version") == 1  # version 1 only, never the current one
    assert redact_url(1) in page
    confirm = client.get(redact_url(1)).content.decode()
    assert 'class="danger"' in confirm and "Redact version 1" in confirm
    assert client.post(redact_url(1), {"reason": ""}).status_code == 400  # reason required
    done = client.post(redact_url(1), {"reason": "names a third party"})
    assert done.status_code == 302 and done["Location"] == FACT

    dump = pg_dump_text()
    assert OLD not in dump and QUOTE not in dump
    fact = MemoryFact.objects.get(subject_id=T, key=KEY)
    assert (fact.value, fact.version) == (NEW, 2)  # the current value does not change
    versions = sorted(
        event.after["version"]
        for event in FactEvent.objects.filter(subject_id=T, key=KEY)
        if event.after and "version" in event.after
    )
    assert versions == [1, 2]  # both versions' rows stay
    first = FactEvent.objects.get(subject_id=T, key=KEY, action=EventAction.CREATED)
    assert first.after["value"] is None and "evidence" not in first.after
    assert first.actor_kind == "agent" and first.redacted_at is None  # the fact is not erased
    redaction = FactEvent.objects.get(subject_id=T, action=EventAction.VERSION_REDACTED)
    assert redaction.reason == "names a third party"
    assert redaction.after["redacted_version"] == 1
    assert redaction.after["value_hash"].startswith("#")
    assert redaction.actor_user_id == privacy_admin.pk

    page = client.get(FACT).content.decode()
    assert "Version 1 redacted on" in page and "names a third party" in page
    assert "Redact this version" not in page
    turn = client.get(TURN).content.decode()
    assert "redacted" in turn and NEW in turn
    as_of = client.get(f"/staff/travellers/{T}/as-of/", {"at": between.isoformat()})
    assert as_of.status_code == 200
    assert "version 1" in as_of.content.decode() and "redacted" in as_of.content.decode()
    for body in (page, turn, as_of.content.decode()):
        assert OLD not in body and QUOTE not in body

    english = _portal("en").get("/portal/your-data").content.decode()
    assert "An earlier version was redacted on" in english and OLD not in english
    home = _portal("en").get("/portal/").content.decode()
    assert "What the assistant had in that chat was redacted on" in home and OLD not in home
    chinese = _portal("zh-hant").get("/portal/your-data").content.decode()
    assert "較早的一個版本已於" in chinese and OLD not in chinese
    exported = _portal("en").get("/portal/download")
    package = b"".join(exported.streaming_content) if exported.streaming else exported.content
    for name, data in members(package).items():  # every file of the package, unpacked
        assert OLD.encode() not in data and QUOTE.encode() not in data, name
    assert NEW in json.dumps(memory(package), ensure_ascii=False)

    replay = agent.put(
        f"/api/v1/subjects/{quote(T)}/facts",
        {"facts": [{"key": KEY, "value": OLD, "evidence": QUOTE}]},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k-1",
    )
    assert replay.status_code == 409  # its stored reply held the words: it went, key kept


@pytest.mark.django_db
def test_an_editor_is_offered_no_redact_control_and_is_refused(client, editor):
    _a_fact_with_two_versions()
    client.force_login(editor)
    page = client.get(FACT).content.decode()
    assert "Redact this version" not in page and "/redact/" not in page
    assert client.get(redact_url(1)).status_code == 403
    assert client.post(redact_url(1), {"reason": "names a third party"}).status_code == 403
    assert not FactEvent.objects.filter(action=EventAction.VERSION_REDACTED).exists()
    assert FactEvent.objects.get(subject_id=T, key=KEY, action="created").after["value"] == OLD


@pytest.mark.django_db
def test_the_current_version_cannot_be_redacted(client, privacy_admin):
    _a_fact_with_two_versions()
    client.force_login(privacy_admin)
    response = client.post(redact_url(2), {"reason": "names a third party"})
    assert response.status_code == 400
    assert "that is a correction or a delete" in response.content.decode()
    assert client.get(redact_url(3)).status_code == 404  # a version never written
    assert MemoryFact.objects.get(subject_id=T, key=KEY).value == NEW
    assert not FactEvent.objects.filter(action=EventAction.VERSION_REDACTED).exists()


@pytest.mark.django_db
def test_the_service_refuses_the_current_and_an_unknown_version_and_writes_no_index():
    _a_fact_with_two_versions()
    admin = Actor.system("t")
    with pytest.raises(FactStateError, match="correction or a delete"):
        services.fact_version_redact(subject_id=T, key=KEY, version=2, actor=admin, reason="r")
    with pytest.raises(FactNotFound):
        services.fact_version_redact(subject_id=T, key=KEY, version=7, actor=admin, reason="r")
    before = _event_table_updates()
    blanked = services.fact_version_redact(
        subject_id=T, key=KEY, version=1, actor=admin, reason="r"
    )
    assert blanked == 2  # the `after` that wrote it and the `before` of the next
    updated, hot = (now - then for now, then in zip(_event_table_updates(), before, strict=True))
    assert updated == hot == 2  # as an erasure's: no index of the history is written
    with pytest.raises(FactStateError, match="already redacted"):
        services.fact_version_redact(subject_id=T, key=KEY, version=1, actor=admin, reason="r")


@pytest.mark.django_db
def test_no_index_holds_an_old_value():
    """The search index covers current values only (`memory_fact.value`): no index reads the
    history's snapshots, a quote or a stored reply, so a redacted version leaves no index."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename, indexdef FROM pg_indexes WHERE schemaname = 'public'"
            " AND (indexdef ~* '\\m(before|after|evidence|response_body)\\M'"
            "      OR indexdef ~* 'using (gin|gist)')"
        )
        found = cursor.fetchall()
    assert [table for table, _ in found] == ["memory_fact"]
    assert "(value gin_trgm_ops)" in found[0][1]


@pytest.mark.django_db
def test_the_confirm_page_names_other_versions_that_hold_the_same_words(client, privacy_admin):
    services.fact_upsert(subject_id=T, actor=Actor.agent("h"), facts=[FactDraft(KEY, OLD)])
    for flag in (services.fact_flag_sensitive, services.fact_unflag_sensitive):  # 2, 3: OLD
        flag(subject_id=T, key=KEY, actor=Actor.system("t"), reason="t")
    services.fact_upsert(subject_id=T, actor=Actor.customer(T), facts=[FactDraft(KEY, NEW)])
    client.force_login(privacy_admin)
    page = client.get(redact_url(1)).content.decode()
    assert "Versions 2, 3 hold the same words" in page
    assert "Version 1, 3 hold" not in client.get(redact_url(2)).content.decode()
    assert "Versions 1, 3 hold the same words" in client.get(redact_url(2)).content.decode()
