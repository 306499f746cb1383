"""The one time zone: the airline's (`TIME_ZONE`, an IANA name; default UTC, the demo's
Asia/Taipei). Staff pages, the privacy request clock (a calendar month in this zone), the as-of
input, exports and the portal all show and read times in it; Django makes it the default.

The earlier per-face zones are gone: `PRIVACY_TIME_ZONE`, `STAFF_TIME_ZONE` and
`PORTAL_LANGUAGE_TIME_ZONES`. A deployment that still sets one is stopped at start with a
sentence naming `TIME_ZONE`, rather than silently moving its clock.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.core.exceptions import ImproperlyConfigured

from memoryadmin.conf.env import env

RETIRED = ("PRIVACY_TIME_ZONE", "STAFF_TIME_ZONE", "PORTAL_LANGUAGE_TIME_ZONES")


def one_time_zone() -> str:
    """`TIME_ZONE`, checked: a zone zoneinfo knows; none of the retired per-face zones set."""
    retired = [name for name in RETIRED if env.str(name, default="").strip()]
    if retired:
        raise ImproperlyConfigured(
            f"{', '.join(retired)} no longer exist: set TIME_ZONE, the one zone every page, "
            "the privacy request clock, the exports and the portal use (e.g. Asia/Taipei)."
        )
    name = env.str("TIME_ZONE", default="UTC").strip() or "UTC"
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ImproperlyConfigured(
            f"TIME_ZONE={name!r} is not a time zone: give an IANA name such as Asia/Taipei."
        ) from exc
    return name


TIME_ZONE = one_time_zone()
