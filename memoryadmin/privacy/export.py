""" "Download my data": the traveller's facts, the history of their facts and their switches.

Built on request and never stored, so erasure has no copy to chase. Written for the traveller,
in their language and the airline's one time zone (`TIME_ZONE`, named in the file as
`time_zone`; every moment carries its offset): the switches by the names the portal gives
them, a deleted fact as "a fact you deleted", and why each change happened in plain words
(never a staff member's reason or a turn number, which are internal).

Built here, below both faces, because the portal hands it to the traveller and staff hand it
over for an access request that came by phone, e-mail or letter.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from memoryadmin.facts import selectors as fact_selectors
from memoryadmin.facts.erasure import is_key_digest
from memoryadmin.facts.models import ActorKind, EventAction, FactEvent, MemoryFact
from memoryadmin.usage import selectors as usage_selectors
from memoryadmin.usage.display import why_known
from memoryadmin.usage.selectors import UseSummary

# The portal's switches by the names the portal gives them (portal/forms.py's ChoicesForm labels;
# this module sits below the portal, so it names them itself).
SWITCH_LEARN = gettext_lazy("Learn from my conversations")
SWITCH_USE = gettext_lazy("Let the assistant use what it remembers")


def _when(moment: datetime | None) -> str | None:
    return timezone.localtime(moment).isoformat() if moment else None


def _day(moment: datetime) -> str:
    return date_format(timezone.localtime(moment), "DATE_FORMAT")


def _why(kind: str) -> str:
    """Why a change happened, for the traveller: by who made it, never the internal reason."""
    return {
        ActorKind.EXTRACTION: _("learned from your conversation"),
        ActorKind.AGENT: _("saved by the assistant during your chat"),
        ActorKind.CUSTOMER: _("you did this in the privacy portal"),
        ActorKind.STAFF: _("done by our support team"),
        ActorKind.RETENTION: _("it was kept as long as our rules allow, then deleted"),
    }.get(kind, _("done automatically by our system"))


# What happened, in the traveller's words and language (never the staff pages' labels).
_ACTIONS = {
    EventAction.CREATED: gettext_lazy("remembered"),
    EventAction.UPDATED: gettext_lazy("changed"),
    EventAction.EXPIRY_CHANGED: gettext_lazy("the date it will be deleted changed"),
    EventAction.FLAGGED_SENSITIVE: gettext_lazy("marked as sensitive"),
    EventAction.UNFLAGGED_SENSITIVE: gettext_lazy("no longer marked as sensitive"),
    # A reviewer let a fact be used; nobody confirmed its value with the traveller.
    EventAction.APPROVED: gettext_lazy("approved for use by our team"),
    EventAction.PREFERENCES_CHANGED: gettext_lazy("your choices changed"),
    EventAction.LEGAL_HOLD_PLACED: gettext_lazy("kept for a legal reason"),
    EventAction.LEGAL_HOLD_LIFTED: gettext_lazy("no longer kept for a legal reason"),
    EventAction.VALUE_REVEALED: gettext_lazy("our support team looked at it"),
    # A quality sample's mark says how well the agent learned, not whether the value is true:
    # no verdict reaches the traveller, and never the word "confirmed".
    EventAction.QUALITY_MARKED: gettext_lazy("looked at by our team in a routine check"),
}


def _restriction_words(event: FactEvent) -> str:
    """The use stopped while the fact is checked, and how it resumed (`after["outcome"]`); staff's
    note on what they checked stays with staff, as every reason does."""
    if event.action == EventAction.RESTRICTED:
        if event.actor_kind == ActorKind.CUSTOMER:
            return _("you asked us to stop using it while we check it")
        return _("we stopped using it while we check it")
    outcome = event.after.get("outcome") if isinstance(event.after, dict) else None
    if outcome == "corrected" and event.actor_kind == ActorKind.CUSTOMER:
        return _("you corrected it, so we use it again")
    if outcome == "corrected":
        return _("we started using it again, with the corrected value")
    if outcome == "confirmed":
        return _("we checked it and started using it again")
    if outcome == "lifted" and event.actor_kind == ActorKind.CUSTOMER:
        return _("you asked us to use it again")
    return _("we started using it again")


def _what(event: FactEvent) -> str:
    if event.action == EventAction.SUBJECT_CLEARED:
        return _("you asked the assistant to forget everything")
    if event.action == EventAction.VERSION_REDACTED:  # which version and why stay with staff
        return _("An earlier version was redacted on %(date)s") % {"date": _day(event.created_at)}
    if event.action in (EventAction.RESTRICTED, EventAction.UNRESTRICTED):
        return _restriction_words(event)
    deleted = event.action in (
        EventAction.DELETED,
        EventAction.REJECTED,
        EventAction.EXPIRED,
        EventAction.FORGOTTEN,
    )
    if deleted and event.actor_kind == ActorKind.CUSTOMER:
        return _("a fact you deleted")  # the entry's own time says when
    if deleted:
        return _("a fact was deleted")
    return str(_ACTIONS.get(event.action, gettext_lazy("changed")))


def _fact(fact: MemoryFact, use: UseSummary | None) -> dict[str, Any]:
    why = why_known(fact)
    return {
        "key": fact.key,
        "value": fact.value,
        "category": fact.category,
        "status": fact.status,
        "learned_at": _when(fact.created_at),
        "changed_at": _when(fact.updated_at),
        "origin": fact.origin,
        "expires_at": _when(fact.expires_at),
        # Its use stopped while it is checked (Art. 18), since when; null while it is used.
        "restricted_at": _when(fact.restricted_at),
        # Why it is known: your words it was learned from, or who wrote the current version.
        "evidence": {"source": why.kind, "quote": why.quote or None, "at": _when(why.on)},
        "use": {
            "conversations": use.conversations if use else 0,
            "injected": use.injected if use else 0,
            "recalled": use.recalled if use else 0,
            "last_used_at": _when(use.last_used_at) if use else None,
        },
    }


def _named(event: FactEvent) -> bool:
    """The event is about a fact still known by its key (not erased, not a traveller-wide one)."""
    return bool(event.key) and not is_key_digest(event.key)


# A version marked redacted, by (key, version): when it was redacted.
Redacted = dict[tuple[str, int], str | None]


def _redacted_versions(events: list[FactEvent]) -> Redacted:
    """The versions redacted on their own (their fact still kept): a snapshot marked with its
    `redacted_at`, or the event that wrote the version marked as a whole. Every snapshot of
    such a version then shows as redacted, whatever else the row still holds."""
    marks: Redacted = {}
    for event in events:
        if not _named(event):
            continue
        for shot in (event.before, event.after):
            if isinstance(shot, dict) and shot.get("redacted_at") and "version" in shot:
                marks[(event.key, shot["version"])] = shot["redacted_at"]
        if event.redacted_at is not None and isinstance(event.after, dict):
            marks.setdefault((event.key, event.after.get("version")), _when(event.redacted_at))
    return marks


def _snapshot(key: str, shot: Any, redacted: Redacted) -> Any:
    if isinstance(shot, dict) and (key, shot.get("version")) in redacted:
        return {
            "version": shot["version"],
            "value": None,
            "redacted_at": redacted[(key, shot["version"])],
        }
    return shot


def _event(event: FactEvent, redacted: Redacted) -> dict[str, Any] | None:
    """One entry of the history; an erased fact's earlier events say nothing its deletion does
    not (their values are gone), so only the deletion is listed. A redacted version of a fact
    still kept is listed with its snapshot as `{"version", "value": null, "redacted_at"}`."""
    if event.redacted_at is not None and not _named(event):
        return None
    entry: dict[str, Any] = {"at": _when(event.created_at), "what": _what(event)}
    if _named(event):
        entry["fact"] = event.key
        entry["before"] = _snapshot(event.key, event.before, redacted)
        entry["after"] = _snapshot(event.key, event.after, redacted)
    entry["why"] = _why(event.actor_kind)
    return entry


def _subject_events(subject_id: str) -> list[FactEvent]:
    """A traveller's whole history, oldest first."""
    return list(FactEvent.objects.filter(subject_id=subject_id).order_by("created_at", "id"))


def traveller_export(subject_id: str, *, now: datetime | None = None) -> dict[str, Any]:
    """The document as of `now` (default: this moment); the same data and moment give the
    same document."""
    subject = fact_selectors.subject_get(subject_id)
    events = _subject_events(subject_id)
    redacted = _redacted_versions(events)
    history = [_event(event, redacted) for event in events]
    facts = list(fact_selectors.subject_facts(subject_id))
    uses = usage_selectors.use_summaries(facts)
    return {
        "exported_at": _when(now or timezone.now()),
        "time_zone": timezone.get_current_timezone_name(),
        "facts": [_fact(fact, uses.get(fact.pk)) for fact in facts],
        "history": [entry for entry in history if entry is not None],
        # Member names are the same in every language (a program reads them); the words of
        # each switch, in the traveller's language, are beside its state.
        "switches": {
            "learn_from_conversations": {
                "label": str(SWITCH_LEARN),
                "on": not (subject and subject.memory_paused),
            },
            "use_memory": {
                "label": str(SWITCH_USE),
                "on": not (subject and subject.memory_use_paused),
            },
        },
    }


def traveller_export_bytes(subject_id: str) -> bytes:
    """The file as handed over: its SHA-256 is the access request's evidence."""
    return json.dumps(traveller_export(subject_id), ensure_ascii=False, indent=2).encode("utf-8")
