"""ENUM_IDENTITY: our MemoryCategory is not upstream's, so `is` fails over our store until the
host applies the README's one-line adapter, which this test takes from the README itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memoryadmin.facts.store import DjangoMemoryStore
from tests.facts.store_contract import fact, run

from .reference import MemoryCategory

pytestmark = pytest.mark.django_db(transaction=True)  # the store's default, native path

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_adapter():
    line = re.search(r"^as_upstream = lambda .*$", README.read_text(encoding="utf-8"), re.M)
    assert line, "the README shows the one-line adapter"
    namespace = {"MemoryCategory": MemoryCategory}  # upstream's enum, as the host imports it
    exec(line.group(0), namespace)  # noqa: S102 - our own README line, that is the point
    return namespace["as_upstream"]


def pinned(facts) -> list[str]:
    """What upstream's runtime pins in tier one: `fact.category is MemoryCategory.CONSTRAINT`."""
    return [f.key for f in facts if f.category is MemoryCategory.CONSTRAINT]


def test_upstreams_identity_check_needs_the_readme_adapter():
    store = DjangoMemoryStore()
    assert store.native
    run(
        store.upsert_facts,
        "enum-1",
        [fact("overnight", "Avoids red-eyes", "constraint"), fact("seat", "Aisle")],
    )
    facts = run(store.tier_one, "enum-1")

    assert pinned(facts) == []  # the difference the README table states
    assert [f.category == "constraint" for f in facts] == [True, False]  # values still agree
    adapted = readme_adapter()(facts)
    assert pinned(adapted) == ["overnight"]
    assert [(f.key, f.value) for f in adapted] == [(f.key, f.value) for f in facts]
