"""The unit tier's own promise: a test here that reaches for the database fails loudly.
(tests/conftest.py also refuses, at collection, a test here that asks for the database.)"""

from __future__ import annotations

import pytest
from django.db import connection

from memoryadmin.facts.models import MemorySettings

pytestmark = pytest.mark.unit


def test_the_orm_is_refused_to_a_unit_test():
    before = connection.connection  # None, unless a database test ran first in this process
    with pytest.raises(RuntimeError, match="Database access not allowed"):
        MemorySettings.objects.count()
    assert connection.connection is before


def test_a_raw_cursor_is_refused_too():
    with pytest.raises(RuntimeError, match="Database access not allowed"):
        connection.cursor()
