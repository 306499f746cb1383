"""A privacy request in the traveller's words: what they asked, where it stands, how it came.

Here, below the faces, because the portal's "Your requests" and the download package
(`package.py`, which staff hand over too) both say it the same way."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from .models import AgentRelation, Channel, RequestKind, RequestStatus

KIND_WORDS = {
    RequestKind.ACCESS: _("A copy of your data"),
    RequestKind.RECTIFICATION: _("A correction"),
    RequestKind.ERASURE: _("Forget everything"),
    RequestKind.RESTRICTION: _("A change to your choices"),
    RequestKind.OBJECTION: _("An objection"),
}
STATUS_WORDS = {
    RequestStatus.OPEN: _("Received"),
    RequestStatus.IN_PROGRESS: _("We're working on it"),
    RequestStatus.COMPLETED: _("Done"),
    RequestStatus.REFUSED: _("We couldn't do this"),
    RequestStatus.ON_HOLD: _("On hold for a legal reason"),
}
CHANNEL_WORDS = {
    Channel.PORTAL: _("You did this on this site"),
    Channel.PHONE: _("You asked us by phone"),
    Channel.EMAIL: _("You asked us by e-mail"),
    Channel.LETTER: _("You asked us by letter"),
}
# How a request someone else made for the traveller came: not "you asked".
ON_BEHALF_CHANNEL_WORDS = {
    Channel.PHONE: _("Asked by phone"),
    Channel.EMAIL: _("Asked by e-mail"),
    Channel.LETTER: _("Asked by letter"),
}
RELATION_WORDS = {
    AgentRelation.TRAVEL_AGENT: _("your travel agent"),
    AgentRelation.FAMILY: _("a family member"),
    AgentRelation.LEGAL: _("your legal representative"),
    AgentRelation.OTHER: _("someone acting for you"),
}
