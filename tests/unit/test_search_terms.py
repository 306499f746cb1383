"""Search's terms travel to SQL_SEARCH as one text joined by spaces (issue 42: psycopg dumps a
list element by element in Python); the statement splits it on the space, which must give back
exactly the terms upstream's whitespace split made, whatever whitespace the query held."""

from __future__ import annotations

import pytest

from memoryadmin.facts.selectors import search_terms, search_terms_param

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "query",
    [
        "aisle",
        "aisle  seat",
        "\taisle\nseat\r\n",
        "靠窗\u3000座位",  # ideographic space
        "no\u00a0break\u2003em\u200aspace",
        "a\x0bb\x0cc\x1cd\x85e\u2028f",
        "%_\\ 'quote' \"double\"",
    ],
)
def test_the_joined_terms_split_on_the_space_are_the_terms(query):
    terms = search_terms(query)
    assert terms and search_terms_param(terms).split(" ") == terms
