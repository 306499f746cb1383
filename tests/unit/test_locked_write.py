"""`db.LockedWrite`: the server-side function a lock and a write become, as text (no database:
`tests/facts/test_locked_functions.py` makes and calls them)."""

from __future__ import annotations

import pytest

from memoryadmin.db import LockedWrite

pytestmark = pytest.mark.unit

LOCK = "SELECT 1 FROM memory_subject WHERE subject_id = %(subject)s FOR UPDATE"
WRITE = (
    "DELETE FROM memory_fact WHERE subject_id = %(subject)s AND key LIKE %(key)s || '%%'"
    " RETURNING key"
)
PARAMS = (("subject", "text"), ("key", "text"))
RETURNS = (("key", "varchar"),)


def write(**changes: object) -> LockedWrite:
    return LockedWrite(
        **{
            "prefix": "t_erase",
            "lock": LOCK,
            "write": WRITE,
            "params": PARAMS,
            "returns": RETURNS,
            **changes,
        }
    )


def test_the_name_is_the_prefix_and_a_hash_of_the_whole_definition():
    assert write().name == write().name
    assert write().name.startswith("t_erase_") and len(write().name) == len("t_erase_") + 16
    # Anything that changes the function changes its name: code and function always agree.
    assert write(write=WRITE.replace("LIKE", "ILIKE")).name != write().name
    assert write(lock=LOCK + " NOWAIT").name != write().name
    assert write(body="RETURN QUERY SELECT 'x'::varchar;").name != write().name
    assert write(returns=(("key", "text"),)).name != write().name


def test_placeholders_become_the_functions_parameters_and_a_double_percent_a_percent():
    text = write().create_sql
    assert f'FUNCTION "{write().name}"("p_subject" text, "p_key" text)' in text
    assert 'RETURNS TABLE ("r_key" varchar)' in text
    assert "subject_id = p_subject AND key LIKE p_key || '%'" in text
    assert "%(" not in text and "%%" not in text
    assert "SET plan_cache_mode = force_generic_plan" in text
    assert text.index("FOR UPDATE") < text.index("DELETE FROM")  # the lock first


def test_a_body_replaces_the_write_in_the_function_and_declares_its_variables():
    text = write(body="RETURN QUERY SELECT %(key)s::varchar;", declare="n integer;").create_sql
    assert "DECLARE\nn integer;\nBEGIN" in text
    assert "RETURN QUERY SELECT p_key::varchar;" in text
    assert "DELETE FROM" not in text


def test_the_call_casts_each_parameter_to_its_type():
    assert write().call_sql == f'SELECT * FROM "{write().name}"(%(subject)s::text, %(key)s::text)'


def test_a_placeholder_that_is_no_parameter_makes_it_unusable_not_an_error():
    unusable = write(write=WRITE.replace("%(key)s", "%(other)s"))
    assert unusable.usable is False
    assert write().usable is True
    # Its own statements (sent without the function) still take the parameters as they are.
    assert unusable.params_of_statements({"subject": "s", "other": "k"}) == {
        "subject": "s",
        "other": "k",
    }


def test_the_statements_get_their_own_parameters_when_they_need_more():
    completed = write(statement_params=lambda params: {**params, "extra": 1})
    assert completed.params_of_statements({"subject": "s"}) == {"subject": "s", "extra": 1}
