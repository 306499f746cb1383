"""FASTPATH_PYDANTIC_CONSTRUCT (memoryadmin/db/fastpaths/pydantic_models.py): the wire models
the trick builds are the ones pydantic's `model_construct` builds, and a model it was not
written for takes pydantic's public path."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import BaseModel, PrivateAttr

from memoryadmin import db
from memoryadmin.db import fastpaths
from memoryadmin.db.fastpaths import pydantic_models
from memoryadmin_client.types import MemoryCategory, MemoryFact

pytestmark = pytest.mark.unit

FIELDS = ("key", "value", "category", "updated_at", "source_session_id", "version")


@pytest.fixture(autouse=True)
def _nothing_found_broken():
    fastpaths.broken_reset()
    pydantic_models._fast_builder.cache_clear()
    yield
    fastpaths.broken_reset()
    pydantic_models._fast_builder.cache_clear()


def _values() -> dict:
    return {
        "key": "seat",
        "value": "Prefers aisle seats",
        "category": MemoryCategory.PREFERENCE,
        "updated_at": datetime(2026, 12, 7, 12, tzinfo=UTC),
        "source_session_id": None,
        "version": 3,
    }


@pytest.mark.parametrize("on", [True, False])
def test_the_built_fact_is_the_one_model_construct_builds(settings, on):
    settings.FASTPATH_PYDANTIC_CONSTRUCT = on
    build = db.model_builder(MemoryFact, FIELDS)
    built, constructed = build(_values()), MemoryFact.model_construct(**_values())
    assert (build is pydantic_models._fast_builder(MemoryFact, FIELDS)) is on
    assert built == constructed
    assert type(built) is MemoryFact
    assert built.model_dump() == constructed.model_dump()
    assert built.model_dump_json() == constructed.model_dump_json()
    assert built.model_fields_set == constructed.model_fields_set == set(FIELDS)
    assert built.model_fields_set is not build(_values()).model_fields_set  # one set each
    assert built.model_extra is None and repr(built) == repr(constructed)
    assert hash(built) == hash(constructed)  # frozen
    with pytest.raises(Exception, match="frozen"):
        built.value = "changed"


class _WithPrivate(BaseModel):
    key: str
    _seen: int = PrivateAttr(default=0)


def test_a_model_it_was_not_written_for_takes_pydantics_path(settings, caplog):
    settings.FASTPATH_PYDANTIC_CONSTRUCT = True
    with caplog.at_level("WARNING", logger="memoryadmin.db.fastpaths"):
        build = db.model_builder(_WithPrivate, ("key",))
    built = build({"key": "seat"})
    assert built.key == "seat" and built._seen == 0  # model_construct set the private default
    assert "FASTPATH_PYDANTIC_CONSTRUCT is off" in caplog.text
    assert not fastpaths.enabled("FASTPATH_PYDANTIC_CONSTRUCT")
