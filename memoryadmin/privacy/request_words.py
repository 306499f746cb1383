"""A privacy request in the traveller's words: what they asked, where it stands, how it came.

Here, below the faces, because the portal's "Your requests" and the download package
(`package.py`, which staff hand over too) both say it the same way."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from .models import WORKING, AgentRelation, Channel, PrivacyRequest, RequestKind, RequestStatus

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
# A restriction of one fact (its keyed hash in the evidence), not a switch: what it is, and
# where it stands by the way it ended.
ONE_FACT_WORDS = _("Stop using one thing while it is checked")
CHECKING_WORDS = _("We are checking this. The assistant is not using it.")
OUTCOME_WORDS = {
    "corrected": _("Corrected. The assistant uses the new wording."),
    "confirmed": _(
        "We checked it and it is right, so the assistant uses it again. You can still delete it."
    ),
    "lifted": _("You asked the assistant to use it again."),
    "erased": _("Deleted."),
}


def request_words(request: PrivacyRequest) -> tuple[str, str]:
    """What the traveller asked and where it stands, as "Your requests" and the package both
    say it: a restriction of one fact by its own words, a switch or anything else by its kind."""
    what = KIND_WORDS.get(request.kind, _("A request"))
    status = STATUS_WORDS.get(request.status, _("Received"))
    evidence = request.evidence or {}
    if request.kind == RequestKind.RESTRICTION and evidence.get("key_hash"):
        what = ONE_FACT_WORDS
        if request.status in WORKING:
            status = CHECKING_WORDS
        elif request.status == RequestStatus.COMPLETED:
            status = OUTCOME_WORDS.get(evidence.get("outcome", ""), status)
    return str(what), str(status)


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
