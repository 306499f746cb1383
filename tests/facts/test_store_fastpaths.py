"""The store contract with the fenced speed tricks off (memoryadmin/fastpaths/): every trick at
once, and the one the store goes through (FASTPATH_DJANGO_CURSOR, on the path through Django's
connection; the native path uses no trick). The others (Redis, the API's lean GET) are not on
the store's way; tests/api/test_fastpaths.py runs the API with each of them off."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.backends.postgresql.base import ServerBindingCursor
from django.db.backends.utils import CursorWrapper

from memoryadmin.db import fastpaths
from memoryadmin.db.cursors import hot_cursor
from memoryadmin.facts.store import DjangoMemoryStore
from tests.support.fastpaths import ALL_OFF, TRICKS, turn_off

from .store_contract import MemoryStoreContract, fact, run


@pytest.fixture(autouse=True)
def _nothing_found_broken():
    fastpaths.broken_reset()
    yield
    fastpaths.broken_reset()


@pytest.mark.django_db
class TestStoreWithTricksOff(MemoryStoreContract):
    @pytest.fixture(
        autouse=True,
        params=[ALL_OFF, pytest.param(("FASTPATH_DJANGO_CURSOR",), id="django-cursor-off")],
    )
    def _off(self, request, settings):
        turn_off(settings, request.param)

    @pytest.fixture
    def store(self):
        return DjangoMemoryStore(session_id="sess-1234", native=False)


@pytest.mark.django_db
@pytest.mark.parametrize("off", [True, False])
def test_hot_cursor_is_djangos_own_cursor_when_the_trick_is_off(settings, off):
    """Off: Django's cursor over its own client-side binding psycopg cursor; on: a prepared,
    server-binding one (bare, or in Django's wrapper when something reads the wrapper)."""
    settings.FASTPATH_DJANGO_CURSOR = not off
    with hot_cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
    assert _prepared(cursor) is not off
    if off:
        assert isinstance(cursor, CursorWrapper)  # Django's errors and transaction checks


def _prepared(cursor) -> bool:
    raw = cursor.cursor if isinstance(cursor, CursorWrapper) else cursor
    return isinstance(raw, ServerBindingCursor)


@pytest.mark.django_db
def test_a_trick_found_broken_takes_the_public_path_and_says_so_once(settings, caplog):
    """What an upgrade that breaks a trick does: the library at another major version than the
    trick was written for (django 99 is not installed) turns it off, with one warning."""
    settings.FASTPATH_DJANGO_CURSOR = True
    with caplog.at_level("WARNING", logger="memoryadmin.db.fastpaths"):
        assert not fastpaths.fits("FASTPATH_DJANGO_CURSOR", "django", 99)
        assert not fastpaths.fits("FASTPATH_DJANGO_CURSOR", "django", 99)
    assert [r.getMessage() for r in caplog.records] == [
        "fast path FASTPATH_DJANGO_CURSOR is off: django 5 is installed, the trick was written "
        "for 99.x; using the library's public API instead"
    ]
    assert not fastpaths.enabled("FASTPATH_DJANGO_CURSOR")
    with hot_cursor() as cursor:
        assert isinstance(cursor, CursorWrapper) and not _prepared(cursor)
    assert fastpaths.fits("FASTPATH_DJANGO_CURSOR", "django", 5, (connection, "cursor"))
    assert not fastpaths.fits("FASTPATH_X", "django", 5, (connection, "no_such_attribute"))


def test_every_trick_has_its_setting_on_by_default():
    from django.conf import settings as django_settings

    assert all(getattr(django_settings, name) is True for name in TRICKS)


@pytest.mark.django_db
def test_store_reads_equal_with_and_without_the_tricks(settings):
    store = DjangoMemoryStore(session_id="sess-1", native=False)
    run(store.upsert_facts, "fp-1", [fact("seat", "Prefers aisle seats"), fact("meal", "素食")])
    on = [run(store.get_facts, "fp-1"), run(store.tier_one, "fp-1")]
    turn_off(settings, TRICKS)
    assert [run(store.get_facts, "fp-1"), run(store.tier_one, "fp-1")] == on
