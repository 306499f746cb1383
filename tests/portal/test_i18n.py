"""English and Traditional Chinese: chosen from Accept-Language or the switcher, for the portal
only (staff pages stay English), with complete hand-written catalogs compiled in the repo."""

from __future__ import annotations

import ast
import gettext
import re
from pathlib import Path

import pytest
from django.test import Client

from memoryadmin.portal.middleware import LANGUAGE_COOKIE
from tests.factories import FactFactory

from .conftest import A

pytestmark = pytest.mark.django_db
LOCALE = Path(__file__).resolve().parents[2] / "locale"


def po_entries(path: Path) -> list[tuple[str, list[str]]]:
    """(msgid, [msgstr...]) pairs of a .po file; enough of the format for our own catalogs."""
    entries: list[tuple[str, list[str]]] = []
    msgid, strs, current = None, [], None
    for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        if line.startswith("msgid "):
            if msgid is not None:
                entries.append((msgid, strs))
            msgid, strs, current = ast.literal_eval(line[6:]), [], "id"
        elif line.startswith("msgid_plural "):
            current = "plural"
        elif line.startswith("msgstr"):
            strs.append(ast.literal_eval(line.split(" ", 1)[1]))
            current = "str"
        elif line.startswith('"') and current == "id":
            msgid += ast.literal_eval(line)
        elif line.startswith('"') and current == "str":
            strs[-1] += ast.literal_eval(line)
    if msgid is not None:
        entries.append((msgid, strs))
    return [(msgid, strs) for msgid, strs in entries if msgid]


def test_the_chinese_catalog_is_complete_and_its_compiled_file_matches():
    po = po_entries(LOCALE / "zh_Hant" / "LC_MESSAGES" / "django.po")
    assert len(po) > 80
    untranslated = [msgid for msgid, strs in po if not all(strs)]
    assert untranslated == []
    with (LOCALE / "zh_Hant" / "LC_MESSAGES" / "django.mo").open("rb") as handle:
        compiled = gettext.GNUTranslations(handle)
    for msgid, strs in po:
        assert compiled.gettext(msgid) == strs[0] or compiled.ngettext(msgid, "", 1) == strs[0], (
            f"django.mo is stale for {msgid!r}: run manage.py compilemessages"
        )
        for placeholder in re.findall(r"%\(\w+\)[sd]", msgid):
            assert all(placeholder in text for text in strs), msgid


def test_the_english_catalog_is_compiled_too():
    assert (LOCALE / "en" / "LC_MESSAGES" / "django.mo").stat().st_size > 0


@pytest.mark.parametrize("header", ["zh-TW,zh;q=0.9,en;q=0.8", "zh-Hant", "zh-HK"])
def test_chinese_from_accept_language(signed_in, header):
    FactFactory(subject_id=A, key="seat_preference", value="長途航班偏好靠走道座位")
    response = signed_in(A, language=header).get("/portal/")

    body = response.content.decode()
    assert '<html lang="zh-Hant-TW">' in body
    assert "AI 客服記得您哪些事" in body and "您的偏好" in body and "修改" in body
    assert response["Content-Language"] == "zh-hant"
    assert "Accept-Language" in response["Vary"]


def test_english_for_everyone_else(signed_in):
    response = signed_in(A, language="fr-FR,de;q=0.8").get("/portal/")
    assert '<html lang="en">' in response.content.decode()


def test_the_switcher_is_a_plain_form_that_remembers_the_choice_for_the_portal(signed_in):
    client = signed_in(A, language="en")
    page = client.get("/portal/").content.decode()
    assert re.search(r'<form method="post" action="/portal/language"', page)
    assert 'name="language" value="zh-hant"' in page

    response = client.post("/portal/language", {"language": "zh-hant", "next": "/portal/forget"})

    assert response.status_code == 302 and response["Location"] == "/portal/forget"
    cookie = response.cookies[LANGUAGE_COOKIE]
    assert cookie["path"] == "/portal/" and cookie.value == "zh-hant"
    assert "要刪除所有記憶嗎？" in client.get("/portal/forget").content.decode()
    client.post("/portal/language", {"language": "en", "next": "/portal/"})
    assert "Forget everything?" in client.get("/portal/forget").content.decode()


@pytest.mark.parametrize(
    "target", ["https://evil.example/", "//evil.example/portal/", "/staff/", "javascript:alert(1)"]
)
def test_the_switcher_only_returns_to_portal_pages(db, target):
    response = Client().post("/portal/language", {"language": "en", "next": target})
    assert response["Location"] == "/portal/"


def test_the_switcher_refuses_unknown_languages(db):
    response = Client().post("/portal/language", {"language": "xx", "next": "/portal/"})
    assert response.status_code == 302
    assert LANGUAGE_COOKIE not in response.cookies


def test_refusal_pages_speak_chinese_too(db):
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-TW")
    body = client.get("/portal/open/forged", follow=True).content.decode()
    assert "這個連結無法使用" in body and "隱私與記憶" in body


def test_staff_pages_stay_english(db):
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-TW,zh;q=0.9")
    client.cookies[LANGUAGE_COOKIE] = "zh-hant"
    response = client.get("/login/")
    body = response.content.decode()
    assert '<html lang="en">' in body
    assert "Username" in body and "使用者" not in body


def test_messages_are_joined_the_way_each_language_writes(signed_in):
    client = signed_in(A, language="zh-TW")
    client.post("/portal/choices", {"use": "on"})
    notice = client.get("/portal/").content.decode()
    assert "已儲存設定。AI 客服不會再從您的對話中學習新的事情。回答時仍會參考記得的內容。" in notice
    client.post("/portal/choices", {"use": "on", "learn": "on"})  # both on: one sentence
    notice = client.get("/portal/").content.decode()
    assert "已儲存設定。AI 客服會從您的對話中學習，回答時也會參考記得的內容。" in notice
