""" "Your requests" and the readable copy of the traveller's data.

Every privacy request the traveller made (however it arrived) and every "forget everything"
receipt, newest first, each with one reference number: a receipt's number when it has one,
else the request's. The traveller can find one again by typing that number. Only the session's
traveller: every read filters by `request.portal_subject_id`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext

from memoryadmin.facts.topics import topic_label
from memoryadmin.http_methods import read_only
from memoryadmin.privacy import selectors as privacy_selectors
from memoryadmin.privacy.export import traveller_export
from memoryadmin.privacy.models import NOT_CLOSED, Channel, RequestKind, RequestStatus
from memoryadmin.privacy.request_words import (
    CHANNEL_WORDS,
    KIND_WORDS,
    ON_BEHALF_CHANNEL_WORDS,
    RELATION_WORDS,
    STATUS_WORDS,
    request_words,
)

from . import selectors
from .auth import portal_session_required
from .display import GROUPS


@dataclass(frozen=True)
class RequestItem:
    what: str
    reference: str  # the one number to quote: the receipt's, else the request's
    asked_on: date  # the day asked, always known
    asked_at: datetime | None  # the moment, when known (never an hour made up for a day)
    recorded: datetime  # when we recorded it: the list's order
    status: str
    done: bool
    how: str
    receipt: str  # the receipt's number when there is a receipt page to open
    topic: str = ""  # the one fact a restriction is about, while it is still held
    made_by: str = ""  # "Made for you by …" when someone acted for the traveller
    answered_with: str = ""  # an open duplicate: the number of the request it is answered with


def made_by_words(request) -> str:
    """Who made a request for the traveller, in their words ("" when they asked themselves)."""
    if not request.agent_name:
        return ""
    relation = RELATION_WORDS.get(request.agent_relation, RELATION_WORDS["other"])
    return gettext("Made for you by %(name)s (%(relation)s)") % {
        "name": request.agent_name,
        "relation": relation,
    }


def request_items(subject_id: str) -> list[RequestItem]:
    """The traveller's requests and receipts, newest first: two queries, and one for each
    restriction (which names its fact by topic, found by the keyed hash)."""
    items: list[RequestItem] = []
    receipts = {receipt.number: receipt for receipt in selectors.traveller_receipts(subject_id)}
    for request in privacy_selectors.traveller_requests(subject_id):
        receipt = str((request.evidence or {}).get("receipt") or "")
        found = receipts.pop(receipt, None) if receipt else None
        what, status = request_words(request)
        evidence = request.evidence or {}
        topic = ""
        if request.kind == RequestKind.RESTRICTION and evidence.get("key_hash"):
            fact = privacy_selectors.fact_by_hash(subject_id, evidence["key_hash"])
            topic = str(topic_label(fact.key)) if fact is not None else ""
        items.append(
            RequestItem(
                what=what,
                reference=found.number if found else request.number,
                asked_on=request.received_on,
                asked_at=request.received_at,
                recorded=request.created_at,
                status=status,
                done=request.status == RequestStatus.COMPLETED,
                how=str(
                    (ON_BEHALF_CHANNEL_WORDS if request.agent_name else CHANNEL_WORDS).get(
                        request.channel, ""
                    )
                ),
                receipt=found.number if found else "",
                topic=topic,
                made_by=made_by_words(request),
                answered_with=request.duplicate_of.number
                if request.duplicate_of and request.status in NOT_CLOSED
                else "",
            )
        )
    for receipt in receipts.values():  # receipts from before requests were recorded
        items.append(
            RequestItem(
                what=str(KIND_WORDS[RequestKind.ERASURE]),
                reference=receipt.number,
                asked_on=timezone.localdate(receipt.cleared_at),
                asked_at=receipt.cleared_at,
                recorded=receipt.cleared_at,
                status=str(STATUS_WORDS[RequestStatus.COMPLETED]),
                done=True,
                how=str(CHANNEL_WORDS[Channel.PORTAL]),
                receipt=receipt.number,
            )
        )
    items.sort(key=lambda item: item.recorded, reverse=True)
    return items


@read_only
@portal_session_required
def requests_page(request: HttpRequest) -> HttpResponse:
    items = request_items(request.portal_subject_id)
    asked = request.GET.get("number", "").strip().upper()[:40]
    not_found = False
    if asked:
        match = next((item for item in items if item.reference == asked), None)
        if match is not None and match.receipt:
            return redirect("portal:receipt", number=match.receipt)
        if match is not None:
            return redirect(f"{request.path}#ref-{match.reference}")
        not_found = True
    context = {
        "items": items,
        "asked": asked,
        "not_found": not_found,
    }
    return render(request, "portal/requests.html", context, status=200)


def _moment(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


@read_only
@portal_session_required
def export_page(request: HttpRequest) -> HttpResponse:
    """The download as a page: the same content as the JSON, in the traveller's language and
    time zone, topics as labels, for reading on a phone or printing."""
    data = traveller_export(request.portal_subject_id)
    by_category: dict[str, list[dict]] = {}
    for fact in data["facts"]:
        by_category.setdefault(fact["category"], []).append(
            {
                "topic": topic_label(fact["key"]),
                "value": fact["value"],
                "pending": fact["status"] != "active",
                "restricted": bool(fact.get("restricted_at")),
                "learned": _moment(fact["learned_at"]),
                "changed": _moment(fact["changed_at"])
                if fact["changed_at"] != fact["learned_at"]
                else None,
                "expires": _moment(fact["expires_at"]),
                "quote": fact["evidence"]["quote"] if fact["evidence"]["source"] == "said" else "",
                "conversations": fact["use"]["conversations"],
                "last_used": _moment(fact["use"]["last_used_at"]),
            }
        )
    groups = [
        {"title": title, "facts": by_category[category]}
        for category, title, _intro in GROUPS
        if by_category.get(category)
    ]
    history = [
        {
            "at": _moment(entry["at"]),
            "what": entry["what"],
            "topic": topic_label(entry["fact"]) if entry.get("fact") else "",
            "why": entry["why"],
        }
        for entry in reversed(data["history"])
    ]
    exported = _moment(data["exported_at"])
    context = {
        "groups": groups,
        "fact_count": len(data["facts"]),
        "history": history,
        "switches": list(data["switches"].values()),
        "exported_at": exported,
    }
    return render(request, "portal/export_page.html", context)
