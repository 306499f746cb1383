"""Links and sessions: how a traveller gets in, and how long they stay in.

Every change to the traveller's facts goes through `memoryadmin.facts.services`; this module
writes only the portal's own rows (links and sessions), which hold no fact value.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memoryadmin.facts.validation import clean_subject_id

from .models import PortalLink, PortalSession

SECRET_MAX_LENGTH = 100
# last_seen_at is refreshed at most this often, so reading a page is not a write every time.
TOUCH_RESOLUTION = timedelta(minutes=1)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def link_lifetime() -> timedelta:
    return timedelta(minutes=settings.PORTAL_LINK_TTL_MINUTES)


def idle_timeout() -> timedelta:
    return timedelta(minutes=settings.PORTAL_SESSION_IDLE_MINUTES)


@dataclass(frozen=True)
class IssuedLink:
    """The secret goes into the URL handed to the traveller and is never stored."""

    secret: str
    expires_at: datetime


class BadTimeZone(ValueError):
    """The issuer named a zone that is not an IANA time zone name."""


def clean_time_zone(name: str) -> str:
    """An IANA zone name ("Asia/Taipei"), or "" for none. Refuses anything zoneinfo cannot load:
    the API still checks the `time_zone` an issuer may pass, though the portal shows times in
    the one `TIME_ZONE`."""
    if not name:
        return ""
    if not isinstance(name, str) or len(name) > 64 or not name.isascii() or ".." in name:
        raise BadTimeZone(name)
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise BadTimeZone(name) from exc
    return name


class LinkRefused(Exception):
    """Why a link does not open the portal: "used", "expired" or "invalid" (never issued)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@transaction.atomic
def portal_link_issue(
    *,
    subject_id: str,
    issued_by: str,
    valid_for: timedelta | None = None,
) -> IssuedLink:
    """A single-use link for a traveller the caller has already signed in. The portal shows
    times in the airline's one zone (`TIME_ZONE`), whoever issued the link."""
    clean_subject_id(subject_id)
    secret = secrets.token_urlsafe(32)
    expires_at = timezone.now() + (valid_for or link_lifetime())
    PortalLink.objects.create(
        token_hash=hash_secret(secret),
        subject_id=subject_id,
        issued_by=issued_by[:200],
        expires_at=expires_at,
    )
    return IssuedLink(secret=secret, expires_at=expires_at)


def _usable_link(secret: str, *, lock: bool) -> PortalLink:
    if not isinstance(secret, str) or not secret or len(secret) > SECRET_MAX_LENGTH:
        raise LinkRefused("invalid")
    links = PortalLink.objects.select_for_update() if lock else PortalLink.objects
    link = links.filter(token_hash=hash_secret(secret)).first()
    if link is None:
        raise LinkRefused("invalid")
    if link.used_at is not None:
        raise LinkRefused("used")
    if link.expires_at <= timezone.now():
        raise LinkRefused("expired")
    return link


def portal_link_check(*, secret: str) -> PortalLink:
    """Whether a link would open the portal, without spending it. A GET only looks: mail
    scanners open every link in an e-mail, and must not use up the traveller's."""
    return _usable_link(secret, lock=False)


def portal_link_subject(*, secret: str) -> str | None:
    """The traveller a link (used or not) was issued for, or None for a link never issued."""
    if not isinstance(secret, str) or not secret or len(secret) > SECRET_MAX_LENGTH:
        return None
    return (
        PortalLink.objects.filter(token_hash=hash_secret(secret))
        .values_list("subject_id", flat=True)
        .first()
    )


@transaction.atomic
def portal_link_redeem(*, secret: str) -> tuple[PortalSession, str]:
    """Spend the link and open a session bound to its traveller. Returns the session and the
    cookie secret. The link row is locked, so two tabs racing with one link get one session.
    Only the traveller's POST calls this (`portal_link_check` is the GET's look)."""
    link = _usable_link(secret, lock=True)
    now = timezone.now()
    link.used_at = now
    link.save(update_fields=["used_at"])
    cookie_secret = secrets.token_urlsafe(32)
    session = PortalSession.objects.create(
        key_hash=hash_secret(cookie_secret),
        subject_id=link.subject_id,
        last_seen_at=now,
    )
    return session, cookie_secret


def portal_session_resume(secret: str | None) -> tuple[PortalSession | None, bool]:
    """The live session this cookie belongs to, and whether a cookie was sent for a session that
    has ended (so the page can say "your session ended" rather than "sign in")."""
    if not secret or len(secret) > SECRET_MAX_LENGTH:
        return None, bool(secret)
    session = PortalSession.objects.filter(key_hash=hash_secret(secret)).first()
    if session is None or session.ended_at is not None:
        return None, True
    now = timezone.now()
    if session.last_seen_at <= now - idle_timeout():
        PortalSession.objects.filter(pk=session.pk, ended_at__isnull=True).update(ended_at=now)
        return None, True
    if session.last_seen_at <= now - TOUCH_RESOLUTION:
        PortalSession.objects.filter(pk=session.pk).update(last_seen_at=now)
        session.last_seen_at = now
    return session, False


def portal_session_end(*, session: PortalSession) -> None:
    """Sign out: the cookie stops working at once, whatever the browser keeps."""
    PortalSession.objects.filter(pk=session.pk, ended_at__isnull=True).update(
        ended_at=timezone.now()
    )


def portal_purge_stale(*, keep_for: timedelta = timedelta(days=1)) -> tuple[int, int]:
    """Housekeeping (Celery beat): links expired and sessions ended or idle for more than
    `keep_for` are deleted. Neither holds a value, but nobody needs them any more. Returns the
    number of links and sessions deleted."""
    cutoff = timezone.now() - keep_for
    links, _ = PortalLink.objects.filter(expires_at__lt=cutoff).delete()
    idle_cutoff = cutoff - idle_timeout()
    sessions, _ = (
        PortalSession.objects.filter(ended_at__lt=cutoff)
        | PortalSession.objects.filter(last_seen_at__lt=idle_cutoff)
    ).delete()
    return links, sessions
