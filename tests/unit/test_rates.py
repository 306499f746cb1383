"""The one rate grammar (`memoryadmin.conf.env.parse_rate`): what it accepts, what it refuses,
and that a bad rate in the environment stops settings from loading, naming its variable."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from memoryadmin.conf.env import RATE_FORMS, Env, Rate, parse_rate, rate_of

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("600/minute", Rate(600, 60)),
        ("600/min", Rate(600, 60)),
        ("600/m", Rate(600, 60)),
        ("20/second", Rate(20, 1)),
        ("20/sec", Rate(20, 1)),
        ("20/s", Rate(20, 1)),
        ("5000/hour", Rate(5000, 3600)),
        ("5000/h", Rate(5000, 3600)),
        ("10000/day", Rate(10000, 86400)),
        ("10000/d", Rate(10000, 86400)),
        (" 10/min ", Rate(10, 60)),  # the value around it is trimmed, as for every variable
        ("999999999/s", Rate(999999999, 1)),
    ],
)
def test_a_rate_is_a_count_per_second_minute_hour_or_day(text, rate):
    assert parse_rate(text) == rate


@pytest.mark.parametrize(
    "text",
    [
        "600/mango",  # once read as per minute from its first letter
        "600/mins",  # no plurals
        "600/minutes",
        "10/Minute",  # lower case only
        "10/MIN",
        "10 / min",  # no spaces inside
        "10/fortnight",
        "0/min",  # a limit of nothing is a switch, not a rate
        "-1/s",
        "01/s",
        "1.5/s",
        "1000000000/s",  # over 9 digits
        "10",
        "/min",
        "10/",
        "10/min/2",
        "fast",
        "",
    ],
)
def test_anything_else_is_refused_not_guessed(text):
    with pytest.raises(ValueError, match="is not a rate: write N/second"):
        parse_rate(text)


def test_a_setting_is_taken_as_it_is_and_a_stored_rate_is_parsed():
    assert rate_of(Rate(3, 60)) == Rate(3, 60)
    assert rate_of("3/min") == Rate(3, 60)
    limit, period = rate_of("3/h")
    assert (limit, period) == (3, 3600)


def test_env_rate_names_the_variable_and_the_accepted_forms():
    env = Env({"API_THROTTLE_RATE": "600/mango", "EMPTY_RATE": " ", "GOOD_RATE": "7/day"})

    with pytest.raises(ImproperlyConfigured) as refused:
        env.rate("API_THROTTLE_RATE", default="600/min")

    assert str(refused.value) == f"API_THROTTLE_RATE='600/mango' is not a rate: write {RATE_FORMS}."
    assert env.rate("EMPTY_RATE", default="10/min") == Rate(10, 60)  # empty: the default
    assert env.rate("UNSET_RATE", default="10/min") == Rate(10, 60)
    assert env.rate("GOOD_RATE", default="10/min") == Rate(7, 86400)


@pytest.mark.parametrize(
    ("variable", "value"),
    [("API_THROTTLE_RATE", "600/mango"), ("PORTAL_REDEEM_RATE", "10/minutes")],
)
def test_a_bad_rate_in_the_environment_stops_settings_loading(variable, value):
    """Settings read once at start-up, so a fresh interpreter; the database URL only has to
    parse (nothing connects)."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
        "DATABASE_URL": "postgres://nobody@127.0.0.1:1/nothing",
        "DEBUG": "true",
        variable: value,
    }
    result = subprocess.run(  # noqa: S603 - fixed argv
        [sys.executable, "-c", "import django; django.setup(); print('started')"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode != 0
    assert "started" not in result.stdout
    last = result.stderr.strip().splitlines()[-1]
    assert last == (
        f"django.core.exceptions.ImproperlyConfigured: {variable}={value!r} is not a rate: "
        f"write {RATE_FORMS}."
    )
