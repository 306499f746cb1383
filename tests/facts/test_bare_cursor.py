"""The agent's reads on the cursor production uses. Every other test runs with the suite's
execute wrapper on the connection (tests/conftest.py, `fact_write_guard`), and with any wrapper
installed `hot_cursor` hands out Django's wrapped cursor instead of the bare one
(memoryadmin/db/fastpaths/django_cursor.py): tests marked `bare_cursor` run without it, so a
break in the bare cursor fails here. (tests/api/test_lean_get.py runs the same way.)"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.db import connection
from django.db.backends.utils import CursorWrapper
from rest_framework.test import APIClient

from memoryadmin.api.tokens import token_issue
from memoryadmin.db.cursors import hot_cursor
from memoryadmin.db.fastpaths import django_cursor
from memoryadmin.facts import selectors, services
from memoryadmin.facts.actors import Actor

pytestmark = [pytest.mark.django_db, pytest.mark.bare_cursor]

SUBJECT = "FF-BARE-1"
ACTOR = Actor.system("test")


@pytest.fixture
def facts():
    services.fact_upsert(
        subject_id=SUBJECT,
        facts=[
            services.FactDraft("seat_preference", "Aisle, 靠走道"),
            services.FactDraft("no_red_eyes", "Avoids red-eye flights", "constraint"),
            services.FactDraft("meal_preference", "Vegetarian meals"),
        ],
        actor=ACTOR,
    )


def test_the_hot_cursor_here_is_the_bare_production_cursor():
    """Nothing reads the wrapper, so the cursor is the prepared psycopg cursor itself, with no
    Django CursorWrapper around it; the suite's other tests get the wrapped one."""
    assert not connection.execute_wrappers and not connection.queries_logged
    with hot_cursor() as cursor:
        cursor.execute("SELECT %(n)s::int + 1", {"n": 41})
        assert cursor.fetchone() == (42,)
    assert type(cursor) is django_cursor._cursor_classes()[1]  # BareCursor
    assert not isinstance(cursor, CursorWrapper)
    with (
        connection.execute_wrapper(lambda execute, *args: execute(*args)),
        hot_cursor() as wrapped,
    ):
        assert isinstance(wrapped, CursorWrapper)


def test_the_agents_reads_answer_on_it(facts):
    assert [f.key for f in selectors.facts_for_agent(SUBJECT)] == [
        "seat_preference",
        "no_red_eyes",
        "meal_preference",
    ]
    # Constraints first, then the others newest first.
    assert [f.key for f in selectors.tier_one(SUBJECT)] == [
        "no_red_eyes",
        "meal_preference",
        "seat_preference",
    ]
    assert [f.key for f in selectors.facts_search(SUBJECT, "走道 VEGETARIAN")] == [
        "seat_preference",
        "meal_preference",
    ]
    seat = selectors.fact_for_agent(SUBJECT, "seat_preference")
    assert (seat.value, seat.category, seat.version) == ("Aisle, 靠走道", "preference", 1)
    assert selectors.fact_for_agent(SUBJECT, "nothing_here") is None
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements")
        assert cursor.fetchone()[0] >= 4  # prepared, as in production


def test_purge_generation_counts_each_clear(facts):
    assert selectors.purge_generation(SUBJECT) == 0
    assert selectors.purge_generation("FF-NEVER-SEEN") == 0
    services.subject_clear(subject_id=SUBJECT, actor=ACTOR)
    services.subject_clear(subject_id=SUBJECT, actor=ACTOR)
    assert selectors.purge_generation(SUBJECT) == 2
    assert selectors.facts_for_agent(SUBJECT) == []


def test_the_apis_gets_answer_on_it(facts):
    _, secret = token_issue(name="agent-host", scopes=("memory:read",))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    base = f"/api/v1/subjects/{quote(SUBJECT, safe='')}"

    listed = client.get(f"{base}/facts")
    assert listed.status_code == 200
    assert [f["key"] for f in listed.json()["facts"]] == [
        "seat_preference",
        "no_red_eyes",
        "meal_preference",
    ]
    tier = client.get(f"{base}/tier-one")
    assert [f["key"] for f in tier.json()["facts"]][0] == "no_red_eyes"
    found = client.get(f"{base}/facts/search", {"q": "red-eye"})
    assert [f["key"] for f in found.json()["facts"]] == ["no_red_eyes"]
    one = client.get(f"{base}/facts/seat_preference")
    assert (one.status_code, one["ETag"], one.json()["value"]) == (200, '"1"', "Aisle, 靠走道")
    assert client.get(f"{base}/facts/nothing_here").status_code == 404
    generation = client.get(f"{base}/purge-generation")
    assert generation.json() == {"purge_generation": 0}
