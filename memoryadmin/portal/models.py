"""What the portal keeps: single-use links and the sessions they open.

Neither holds a secret in the clear: a link and a session cookie are random strings the
traveller's browser carries, and only their SHA-256 is stored, so a database dump opens no
portal. Neither holds a fact value either, so erasure has nothing to do here.
"""

from __future__ import annotations

from django.db import models

from memoryadmin.facts.models import SUBJECT_ID_MAX_LENGTH


class PortalLink(models.Model):
    """A link the airline's backend asked for on behalf of a signed-in traveller."""

    token_hash = models.CharField(max_length=64, unique=True)
    subject_id = models.CharField(max_length=SUBJECT_ID_MAX_LENGTH)
    issued_by = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "portal_link"
        indexes = [models.Index(fields=["expires_at"], name="portal_link_expires_at")]

    def __str__(self) -> str:
        return f"portal link for {self.subject_id}"


class PortalSession(models.Model):
    """A traveller's signed-in browser. Bound to one subject for its whole life."""

    key_hash = models.CharField(max_length=64, unique=True)
    subject_id = models.CharField(max_length=SUBJECT_ID_MAX_LENGTH)
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "portal_session"
        indexes = [models.Index(fields=["last_seen_at"], name="portal_session_last_seen")]

    def __str__(self) -> str:
        return f"portal session for {self.subject_id}"
