"""A token with only memory:write must not read a traveller's facts through the reply of
`PUT /subjects/{id}/facts` (issue 19): without memory:read the reply holds only what it wrote."""

from __future__ import annotations

import pytest

from .conftest import facts_url

pytestmark = pytest.mark.django_db


def test_a_write_only_token_gets_back_only_what_it_wrote(make_agent):
    reader_writer = make_agent()
    reader_writer.put(
        facts_url("FF-W1"),
        {
            "facts": [
                {"key": "meal", "value": "Vegetarian meals"},
                {"key": "seat", "value": "Prefers aisle seats"},
            ]
        },
        format="json",
    )
    writer = make_agent("memory:write", name="write-only")
    assert writer.get(facts_url("FF-W1")).status_code == 403

    reply = writer.put(
        facts_url("FF-W1"),
        {
            "facts": [
                {"key": "lounge", "value": "Likes a quiet lounge"},
            ]
        },
        format="json",
    )

    assert reply.status_code == 200
    assert [(f["key"], f["value"]) for f in reply.json()["facts"]] == [
        ("lounge", "Likes a quiet lounge")
    ]
    assert "Vegetarian" not in reply.content.decode()


def test_a_token_that_may_read_still_gets_the_agents_view(make_agent):
    agent = make_agent()
    agent.put(
        facts_url("FF-W2"), {"facts": [{"key": "meal", "value": "Vegetarian meals"}]}, format="json"
    )
    reply = agent.put(
        facts_url("FF-W2"), {"facts": [{"key": "seat", "value": "Aisle"}]}, format="json"
    )
    assert [f["key"] for f in reply.json()["facts"]] == ["meal", "seat"]
