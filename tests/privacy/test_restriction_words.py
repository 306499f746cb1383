"""The traveller's own history says in words what happened to a fact whose use was stopped
while it was checked, and how its use resumed: on "Your data" and in the package's history.csv
and index.html, in English and Traditional Chinese, never the fallback "changed"."""

from __future__ import annotations

import pytest

from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.services.restriction import CONFIRMED
from memoryadmin.privacy.restriction import privacy_restrict
from tests.factories import FactFactory
from tests.portal.conftest import A
from tests.staff.conftest import make_staff
from tests.support.package import members, memory, rows

pytestmark = pytest.mark.django_db

WORDS = {
    "en": {
        "stopped": "you asked us to stop using it while we check it",
        "staff_stopped": "we stopped using it while we check it",
        "confirmed": "we checked it and started using it again",
        "lifted": "you asked us to use it again",
        "corrected": "we started using it again, with the corrected value",
        "you_corrected": "you corrected it, so we use it again",
        "changed": "changed",
    },
    "zh-hant": {
        "stopped": "您要求我們在確認期間先暫停使用",
        "staff_stopped": "我們在確認期間先暫停使用",
        "confirmed": "我們確認無誤後已恢復使用",
        "lifted": "您要求我們恢復使用",
        "corrected": "我們已更正內容並恢復使用",
        "you_corrected": "您已更正內容，我們恢復使用",
        "changed": "已修改",
    },
}


@pytest.mark.parametrize("language", ["en", "zh-hant"])
def test_each_step_of_a_restriction_has_its_words_in_the_history(signed_in, language):
    words = WORDS[language]
    staff = Actor.staff(make_staff("eddie", "editor"))
    FactFactory(subject_id=A, key="seat_preference", value="Middle seat, always")
    FactFactory(subject_id=A, key="meal_preference", value="Vegetarian meals")
    FactFactory(subject_id=A, key="home_airport", value="Flies out of Taoyuan")
    FactFactory(subject_id=A, key="travel_party", value="Travels with spouse")
    client = signed_in(A, language=language)
    # the traveller stops three in the portal; staff stop one for a call
    for key in ("seat_preference", "meal_preference", "travel_party"):
        response = client.post(f"/portal/facts/{key}/stop-using", {"note": "not right"})
        assert response.status_code == 302, response.content[:300]
    privacy_restrict(
        subject_id=A, key="home_airport", actor=staff, reason="called in", channel="phone"
    )
    # staff confirm one, the traveller lifts one, staff correct one, the traveller another
    services.fact_unrestrict(
        subject_id=A, key="seat_preference", actor=staff, reason="asked", outcome=CONFIRMED
    )
    assert client.post("/portal/facts/meal_preference/use-again").status_code == 302
    services.fact_edit(
        subject_id=A,
        key="home_airport",
        value="Flies out of Songshan",
        expected_version=1,
        actor=staff,
        reason="the traveller called",
    )
    corrected = client.post(
        "/portal/facts/travel_party/change", {"value": "Travels alone for work", "version": 1}
    )
    assert corrected.status_code == 302, corrected.content[:300]

    page = client.get("/portal/your-data").content.decode()
    package = client.get("/portal/download").content
    history = [row[2] for row in rows(package, "history.csv")[1:]]
    index = members(package)["index.html"].decode()
    for step in ("stopped", "staff_stopped", "confirmed", "lifted", "corrected", "you_corrected"):
        assert words[step] in page, step
        assert words[step] in history, step
        assert words[step] in index, step
    assert history.count(words["stopped"]) == 3
    assert history.count(words["changed"]) == 2  # the corrections' own new values, nothing else


COPY_WORDS = {
    "en": {
        "state": "not in use while we check it",
        "checking": "We are checking this. The assistant is not using it.",
        "asked": "Stop using one thing while it is checked",
    },
    "zh-hant": {
        "state": "確認期間暫停使用",
        "checking": "我們正在確認這一筆。AI 客服目前不會使用。",
        "asked": "暫停使用一筆，等待確認",
    },
}


@pytest.mark.parametrize("language", ["en", "zh-hant"])
def test_the_copy_says_a_restricted_fact_is_not_in_use(signed_in, language):
    """ "Your data", facts.csv (and so index.html) and memory.json say the fact is not used while
    it is checked: never "in use", which was false; requests.csv names the request as "Your
    requests" does, not "A change to your choices" "in progress"."""
    state, checking = COPY_WORDS[language]["state"], COPY_WORDS[language]["checking"]
    FactFactory(subject_id=A, key="seat_preference", value="Middle seat, always")
    FactFactory(subject_id=A, key="meal_preference", value="Vegetarian meals")
    client = signed_in(A, language=language)
    client.post("/portal/facts/seat_preference/stop-using", {"note": ""})

    package = client.get("/portal/download").content
    states = {row[1]: row[2] for row in rows(package, "facts.csv")[1:]}
    assert states["Middle seat, always"] == state
    assert states["Vegetarian meals"] != state
    facts = {fact["key"]: fact for fact in memory(package)["facts"]}
    assert facts["seat_preference"]["restricted_at"]
    assert facts["meal_preference"]["restricted_at"] is None
    assert state in members(package)["index.html"].decode()
    page = client.get("/portal/your-data").content.decode()
    assert page.count("data-restricted") == 1 and checking in page
    asked = [row for row in rows(package, "requests.csv")[1:] if row[0].startswith("PR-")]
    assert [(row[1], row[4]) for row in asked] == [(COPY_WORDS[language]["asked"], checking)]
