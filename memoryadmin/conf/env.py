"""The one way settings read the environment: django-environ's `Env`, made strict.

Every read is typed, and a value that does not parse is an ImproperlyConfigured that names the
variable (`DB_CONN_MAX_AGE='abc' is not an integer`), which manage.py prints as one line, instead
of a bare ValueError from deep inside a cast. Three differences from django-environ's own reading:
- a value is taken literally: no `$OTHER_VARIABLE` references (a secret may start with `$`);
- an empty boolean or number is the same as an unset one (the default applies): `KEY=` in an
  env file; an empty string or list is the empty value (`ALLOWED_HOSTS=` allows no host);
- booleans and numbers are strict: `SECURE_COOKIES=ture` or `WEBHOOK_TIMEOUT_SECONDS=10s` is an
  error, not False or 10.0 (django-environ reads any unknown word as False and drops letters
  from floats).

Rates (`API_THROTTLE_RATE`, `PORTAL_REDEEM_RATE`, a service token's own rate) have one grammar,
`parse_rate`: `N/second`, `N/minute`, `N/hour` or `N/day`, with the short forms `s` and `sec`,
`m` and `min`, `h`, `d`; N a whole number from 1 to 999999999; lower case, no spaces, no plurals.
Anything else (`600/mango`, `10/mins`, `0/min`, `10/Minute`) is refused, never guessed at.
"""

from __future__ import annotations

import functools
import math
import re
import warnings
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

NOTSET = environ.Env.NOTSET
TRUE_WORDS = frozenset({"1", "true", "yes", "on", "y", "ok"})
FALSE_WORDS = frozenset({"0", "false", "no", "off", "n"})
DATABASE_URL_MISSING = (
    "Set DATABASE_URL (a PostgreSQL URL); `make run` and `make test` start an embedded "
    "PostgreSQL and set it for you."
)


class Rate(NamedTuple):
    """Requests allowed per period: `600/min` is Rate(count=600, seconds=60)."""

    count: int
    seconds: int


RATE_PERIODS = {
    "second": 1,
    "sec": 1,
    "s": 1,
    "minute": 60,
    "min": 60,
    "m": 60,
    "hour": 3600,
    "h": 3600,
    "day": 86400,
    "d": 86400,
}
RATE_FORMS = (
    "N/second, N/minute, N/hour or N/day, N a whole number from 1 "
    "(short forms: s or sec, m or min, h, d)"
)
_RATE = re.compile(r"([1-9][0-9]{0,8})/([a-z]+)")


@functools.lru_cache(maxsize=256)
def parse_rate(text: str) -> Rate:
    """The one rate grammar: "600/min" -> Rate(600, 60). Cached: a token's stored rate is read
    on every request it makes."""
    match = _RATE.fullmatch(text.strip())
    if match is None or match[2] not in RATE_PERIODS:
        raise ValueError(f"is not a rate: write {RATE_FORMS}")
    return Rate(int(match[1]), RATE_PERIODS[match[2]])


def rate_of(value: Rate | str) -> Rate:
    """A setting's Rate as it is; a string (a token's stored rate, a test's override) parsed."""
    return value if isinstance(value, Rate) else parse_rate(value)


def _bool(raw: str) -> bool:
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError("is not a boolean (true/false, yes/no, on/off, 1/0)")


def _int(raw: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise ValueError("is not an integer") from None


def _float(raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise ValueError("is not a number") from None
    if not math.isfinite(value):
        raise ValueError("is not a finite number")
    return value


def _list(raw: str) -> list[str]:
    return [item.strip() for item in raw.split(",") if item.strip()]


def _dict(raw: str) -> dict[str, str]:
    pairs = {}
    for item in _list(raw):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"has {item!r}, not a name=value pair (name=value,name=value)")
        pairs[key.strip()] = value.strip()
    return pairs


_CASTS = {bool: _bool, int: _int, float: _float, list: _list, dict: _dict}
_SCALARS = (bool, int, float)


class Env(environ.Env):
    """django-environ's reader; its typed methods (`str`, `bool`, `int`, `float`, `list`, `dict`,
    `db_url`) all come through `get_value` here, which names the variable in every error."""

    def __init__(self, environ_map: Any = None, **scheme: Any) -> None:
        super().__init__(**scheme)
        if environ_map is not None:  # a test's own environment, instead of the process's
            self.ENVIRON = environ_map

    def get_value(
        self, var: str, cast: Any = None, default: Any = NOTSET, parse_default: bool = False
    ) -> Any:
        raw = self.ENVIRON.get(var)
        strict = _CASTS.get(cast) if isinstance(cast, type) else None
        if raw is None or (cast in _SCALARS and not raw.strip()):
            if default is NOTSET:
                raise ImproperlyConfigured(f"Set {var}.")
            return default
        try:
            if strict is not None:
                return strict(raw)
            return raw if cast in (None, str) else self.parse_value(raw, cast)
        except (ValueError, TypeError) as exc:
            raise ImproperlyConfigured(f"{var}={raw.strip()!r} {_reason(exc)}.") from None

    def str(
        self, var: str, default: Any = NOTSET, multiline: bool = False, choices: Any = NOTSET
    ) -> Any:
        value = super().str(var, default=default, multiline=multiline)
        if choices is not NOTSET and value not in choices:
            raise ImproperlyConfigured(f"{var}={value!r} is not one of {', '.join(choices)}.")
        return value

    def choice(self, var: str, default: str, choices: tuple[str, ...]) -> str:
        """One of `choices`, matched whatever its case (`json`, `JSON`), as `choices` spells it."""
        value = self.str(var, default=default).strip() or default
        for choice in choices:
            if value.lower() == choice.lower():
                return choice
        raise ImproperlyConfigured(f"{var}={value!r} is not one of {', '.join(choices)}.")

    def rate(self, var: str, default: str) -> Rate:
        """A request rate in the one grammar (`parse_rate`), checked when settings load; empty is
        the default."""
        raw = self.str(var, default=default).strip() or default
        try:
            return parse_rate(raw)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{var}={raw!r} {exc}.") from None

    def url_str(self, var: str, default: str = "") -> str:
        """A URL kept as the string it is (Celery, Redis and the HTTP clients take strings),
        checked for a scheme and a host. The value is not repeated in the error: a URL can carry
        a password."""
        value = self.str(var, default=default).strip()
        if value and not _is_url(value):
            raise ImproperlyConfigured(f"{var} is not a URL (scheme://host...).")
        return value

    def db_url(self, var: str = "DATABASE_URL", default: Any = NOTSET, engine: Any = None) -> dict:
        """The database settings of a URL, libpq multi-host URLs included
        (`postgresql://h1:5432,h2:5432/db?target_session_attrs=read-write`)."""
        url = self.str(var, default="" if default is NOTSET else default)
        if not url:
            raise ImproperlyConfigured(DATABASE_URL_MISSING)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an unknown scheme: the error below says it
                config = self.db_url_config(url.strip(), engine=engine)
        except (ValueError, TypeError) as exc:
            raise ImproperlyConfigured(f"{var} is not a database URL: {exc}.") from None
        if not config:
            raise ImproperlyConfigured(
                f"{var} is not a database URL (postgres://user@host:5432/name)."
            )
        return config


def _is_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return bool(parts.scheme and parts.netloc)


def _reason(exc: Exception) -> str:
    text = str(exc)
    return text if text.startswith(("is ", "has ")) else f"is not valid: {text}"


env = Env()


def env_bool(name: str, default: bool = False) -> bool:
    """A boolean variable (true/false, yes/no, on/off, 1/0)."""
    return env.bool(name, default=default)


def env_list(name: str, default: str = "") -> list[str]:
    """A comma-separated list; the default is written as the variable would be."""
    return env.list(name, default=_list(default))
