"""When each thing in the demo happened: five weeks of its travellers' lives, written through the
same services the agent host, the extraction worker, the portal and the desk use.

Each traveller's story is a list of steps on the story clock (`clock.py`): conversations whose
turns taught facts (an extraction job per turn, its facts "learned from turn N" of that
conversation's session) or in which the assistant saved one, later turns whose use receipts name
the versions the agent had then, requests in the portal, staff looks. All travellers' steps are
played in the order of their times, so the record reads as five weeks, not one second.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from memoryadmin.access import writer as access_writer
from memoryadmin.access.choices import AccessKind
from memoryadmin.extraction.models import JobStatus
from memoryadmin.extraction.services import job_begin, job_create_or_get, job_finish
from memoryadmin.facts import services
from memoryadmin.facts.actors import Actor
from memoryadmin.facts.models import FactStatus, MemoryFact
from memoryadmin.facts.services import FactDraft
from memoryadmin.facts.validation import session_tag
from memoryadmin.privacy import clock as privacy_clock
from memoryadmin.privacy import flows as privacy_flows
from memoryadmin.privacy import outbox, webhooks
from memoryadmin.privacy.models import AgentRelation, Channel, IdentityCheck, RequestKind
from memoryadmin.privacy.package import traveller_package
from memoryadmin.privacy.restriction import privacy_restrict
from memoryadmin.privacy.services import privacy_request_record
from memoryadmin.quality.services import quality_mark_record, quality_sample_draw
from memoryadmin.staff.roles import EDITOR, PRIVACY_ADMIN, VIEWER
from memoryadmin.usage.services import TurnUse, uses_record

from .clock import StoryClock
from .data import (
    PORTAL_DEMO,
    PORTAL_LANGUAGE,
    QUOTES,
    RESTRICTED,
    SAVED_BY_ASSISTANT,
    WINDOW_QUOTE,
    WINDOW_SEAT,
)

AGENT_HOST = "demo-agent-host"
MODEL = "claude-haiku-4-5"  # what the demo's extraction jobs say they ran


@dataclass
class Story:
    """The steps, each at its time; `play` runs them in time order on the clock."""

    clock: StoryClock
    users: dict[str, object]
    steps: list[tuple[datetime, int, Callable[[], None]]] = field(default_factory=list)

    def at(self, days_ago: float, hour: float, run: Callable[[], None]) -> None:
        when = self.clock.day(days_ago, hour)
        self.steps.append((when, len(self.steps), run))

    def play(self) -> None:
        for when, _order, run in sorted(self.steps, key=lambda step: step[:2]):
            self.clock.set(when)
            run()
            deliver_waiting()  # what the step's events tell the recipients, sent when it happened
        self.steps.clear()


def _session(subject_id: str, chat: int) -> str:
    """The session id the agent host would send for the traveller's n-th chat (only its 12-hex
    tag is kept)."""
    return f"{subject_id}-chat-{chat}"


def learned_in_turn(
    subject_id: str, chat: int, turn: int, drafts: list[FactDraft], words: str
) -> None:
    """One turn's extraction job, run as the worker runs it: queued with the turn's transcript,
    begun, its facts written "learned from turn N" by the job, then ended succeeded with its
    counts (the transcript goes with the end)."""
    tag = session_tag(_session(subject_id, chat))
    job, _ = job_create_or_get(
        subject_id=subject_id,
        session_tag=tag,
        turn_id=str(turn),
        messages=[{"role": "user", "text": words}],
        created_by_label=AGENT_HOST,
    )
    job_begin(job.pk, may_call=True, model=MODEL)
    result = services.fact_upsert(
        subject_id=subject_id,
        facts=drafts,
        actor=Actor.extraction(f"extraction job {job.pk}"),
        reason=f"learned from turn {turn}",
        session_tag=tag,
    )
    job_finish(
        job.pk,
        status=JobStatus.SUCCEEDED,
        proposed=len(drafts),
        stored=len(result.created),
        updated=len(result.updated),
        duplicates=len(result.unchanged),
        sent_to_review=len(result.sent_to_review),
        model=MODEL,
    )


def saved_by_agent(subject_id: str, chat: int, drafts: list[FactDraft]) -> None:
    """The assistant's save_memory in a chat, as the agent API writes it."""
    services.fact_upsert(
        subject_id=subject_id,
        facts=drafts,
        actor=Actor.agent(AGENT_HOST),
        reason="saved by the agent",
        session_tag=session_tag(_session(subject_id, chat)),
    )


def used_in_turn(subject_id: str, chat: int, turn: int, keys: list[str]) -> None:
    """The use receipts of one turn: the agent had the traveller's facts in the prompt (the
    first two, or one) or recalled them (the rest), each at the version current then."""
    versions = dict(
        MemoryFact.objects.filter(subject_id=subject_id, key__in=keys)
        .exclude(status=FactStatus.PENDING_REVIEW)
        .values_list("key", "version")
    )
    named = [{"key": key, "version": versions[key]} for key in keys if key in versions]
    uses_record(
        subject_id=subject_id,
        uses=[
            TurnUse(
                _session(subject_id, chat),
                str(turn),
                injected=named[:2] if turn % 2 else named[:1],
                recalled=named[2:] if turn % 2 else named[1:2],
            )
        ],
    )


def chat_uses(
    story: Story, subject_id: str, chat: int, when: tuple[float, float], turns: range, keys
) -> None:
    """A chat's turns, a few minutes apart from `when` (days ago, hour), each with its
    receipts."""
    days_ago, hour = when
    for n, turn in enumerate(turns):
        story.at(days_ago, hour + n * 0.07, partial(used_in_turn, subject_id, chat, turn, keys))


def deliver_waiting() -> None:
    """Hand every event written so far to the recipients and send each delivery now, over HTTP
    to the demo's receiver (the seed runs in one transaction: nothing would go before its
    commit, at the real time)."""
    for delivery_id in outbox.outbox_dispatch():
        webhooks.delivery_attempt(delivery_id=delivery_id)


def forgot_everything(subject_id: str) -> None:
    """ "Forget everything" in the portal: an erasure request, closed once the check finds no
    row left, and its events delivered to the recipients."""
    traveller = Actor.customer(subject_id)
    outcome = privacy_flows.privacy_forget(
        subject_id=subject_id,
        actor=traveller,
        reason="the traveller chose 'forget everything' in the privacy portal",
    )
    privacy_flows.privacy_verify_erasure(request_id=outcome.request.pk, actor=traveller)


def downloaded(subject_id: str) -> None:
    """ "Download my data" in the portal: the package in the traveller's language, its access
    request closed with the package's SHA-256, as the portal's download records it."""
    package = traveller_package(subject_id, language=PORTAL_LANGUAGE[subject_id])
    privacy_flows.privacy_export_record(
        subject_id=subject_id, sha256=package.sha256, actor=Actor.customer(subject_id)
    )


def corrected(subject_id: str, key: str, value: str) -> None:
    privacy_flows.privacy_correct(
        subject_id=subject_id,
        key=key,
        value=value,
        expected_version=None,
        actor=Actor.customer(subject_id),
        reason="corrected by the traveller in the privacy portal",
    )


def restricted_fact(subject_id: str) -> None:
    """ "Stop using this while you check it" in the portal, with the traveller's words: the fact
    is kept but no longer used, and a restriction request runs on the legal clock."""
    key, note = RESTRICTED[subject_id]
    privacy_restrict(
        subject_id=subject_id,
        key=key,
        actor=Actor.customer(subject_id),
        reason="portal",
        note=note,
    )


def redacted_version(subject_id: str, privacy_admin) -> None:
    """A privacy admin redacts the first seat version, which named a colleague: its value and
    quote go, its number, time and actor stay; the current value is untouched."""
    services.fact_version_redact(
        subject_id=subject_id,
        key="seat_preference",
        version=1,
        actor=Actor.staff(privacy_admin),
        reason="names a third party",
    )


# The demo's request made by someone else: a travel agent asks by e-mail for a copy of one
# traveller's memory; the editor checked the traveller's identity by calling them back.
AGENT_DEMO = "FF-100236"


def agent_made_request(story: Story, subject_id: str) -> None:
    """A travel agent's access request for the traveller, recorded by the editor two days ago,
    identity checked by phone, authority a signed letter: open, so that the request page and
    the traveller's "Your requests" show "Made … by Jade Lin (travel agent)"."""
    editor = Actor.staff(story.users[EDITOR])

    def record() -> None:
        privacy_request_record(
            subject_id=subject_id,
            kind=RequestKind.ACCESS,
            channel=Channel.EMAIL,
            received_on=privacy_clock.today(),
            actor=editor,
            note="the agent asks for a copy of the traveller's memory",
            identity_check=IdentityCheck.CHECKED,
            identity_checked="called the traveller back on the booking's number; confirmed "
            "the booking reference and date of birth",
            agent_name="Jade Lin, Lin Travel",
            agent_relation=AgentRelation.TRAVEL_AGENT,
            agent_authority="signed letter of authority",
        )

    story.at(2, 10.5, record)


def looked(user, what: AccessKind, subject_id: str) -> None:
    access_writer.record(
        staff_user_id=user.pk,
        staff_username=user.get_username(),
        what=what,
        subject_ids=[subject_id],
        address="127.0.0.1",
    )
    access_writer.flush()


def _drafts(subject_id: str, facts: list[tuple[str, str, str]]) -> list[FactDraft]:
    return [
        FactDraft(key, value, category, evidence=QUOTES.get((subject_id, key), ""))
        for key, value, category in facts
    ]


def _seat_drafts(subject_id: str, seat: list[tuple[str, str, str]]) -> list[FactDraft]:
    """The first chat's window seat, with the words the traveller said then."""
    return [
        FactDraft(key, value, category, evidence=WINDOW_QUOTE[subject_id])
        for key, value, category in seat
    ]


def _words(subject_id: str, facts: list[tuple[str, str, str]]) -> str:
    return " ".join(QUOTES.get((subject_id, key), value) for key, value, _category in facts)


def portal_traveller(story: Story, subject_id: str, facts: list[tuple[str, str, str]], late: int):
    """The portal's demo traveller (`late` days behind the first): a fact learned, then forgotten
    with everything; later chats teach a window seat, then the aisle and the rest (one fact the
    assistant saves), four chats use them; a download, a correction, staff looks."""
    keys = [key for key, _value, _category in facts]
    lounge = [("lounge_habit", PORTAL_DEMO[subject_id][0], "preference")]
    learned = [fact for fact in facts if (subject_id, fact[0]) not in SAVED_BY_ASSISTANT]
    saved = [fact for fact in facts if (subject_id, fact[0]) in SAVED_BY_ASSISTANT]
    seat = [("seat_preference", WINDOW_SEAT[subject_id], "preference")]
    add = story.at
    add(
        35 - late,
        9.2,
        partial(learned_in_turn, subject_id, 1, 1, _drafts(subject_id, lounge), lounge[0][1]),
    )
    add(30 - late, 21.5, partial(forgot_everything, subject_id))
    add(
        27 - late,
        8.4,
        partial(
            learned_in_turn,
            subject_id,
            2,
            1,
            _seat_drafts(subject_id, seat),
            WINDOW_QUOTE[subject_id],
        ),
    )
    add(
        20 - late,
        13.1,
        partial(
            learned_in_turn,
            subject_id,
            3,
            1,
            _drafts(subject_id, learned),
            _words(subject_id, learned),
        ),
    )
    add(20 - late, 13.15, partial(saved_by_agent, subject_id, 3, _drafts(subject_id, saved)))
    # the learning chat goes on: its next turns had what turn 1 taught
    chat_uses(story, subject_id, 3, (20 - late, 13.2), range(2, 4), keys)
    chat_uses(story, subject_id, 4, (14 - late, 18.0), range(1, 3), keys)
    add(10 - late, 20.3, partial(downloaded, subject_id))
    chat_uses(story, subject_id, 5, (8 - late, 7.6), range(1, 3), keys)
    add(6 - late, 22.0, partial(corrected, subject_id, "home_airport", PORTAL_DEMO[subject_id][1]))
    chat_uses(story, subject_id, 6, (3 - late, 11.4), range(1, 3), keys)
    rights_used(story, subject_id, late)
    users = story.users
    # a support agent's look after the correction; yesterday, the traveller's call: the agent
    # opens their memory and a fact's history, the privacy officer the request
    add(5 - late, 10.0, partial(looked, users[VIEWER], AccessKind.TRAVELLER, subject_id))
    add(1, 9.0 + late, partial(looked, users[VIEWER], AccessKind.TRAVELLER, subject_id))
    add(1, 9.1 + late, partial(looked, users[VIEWER], AccessKind.FACT_HISTORY, subject_id))
    add(
        1,
        11.0 + late,
        partial(looked, users[PRIVACY_ADMIN], AccessKind.PRIVACY_REQUEST, subject_id),
    )


def rights_used(story: Story, subject_id: str, late: int) -> None:
    """The rights no other memory product offers, used after the last chats: a privacy admin
    redacts the seat version that named a colleague; two days ago the traveller stopped the
    use of a fact while it is checked (its request still open on the legal clock)."""
    story.at(4 - late, 15.0, partial(redacted_version, subject_id, story.users[PRIVACY_ADMIN]))
    story.at(2 - late, 19.5, partial(restricted_fact, subject_id))


def traveller(story: Story, index: int, subject_id: str, facts, learned_by: str) -> None:
    """Any other traveller: a first chat on their own day (spread over the five weeks), for
    some an earlier window seat a later chat replaced, a chat that used what was learned, and
    the desk's or the traveller's own later step where the demo has one."""
    first = 34 - (index - 2) * 27 // 17  # day 34 for the first, day 7 for the last
    hour = 8 + (index * 7) % 12 + 0.25
    chat = 1
    key, value, category = facts[0]
    if key == "seat_preference" and "window" not in value.lower():
        older = [("seat_preference", "Prefers window seats", category)]
        story.at(first, hour, partial(_learn, learned_by, subject_id, chat, older))
        first, chat = first - 6, chat + 1
    story.at(first, hour, partial(_learn, learned_by, subject_id, chat, facts))
    keys = [key for key, _value, _category in facts]
    chat_uses(story, subject_id, chat + 1, (max(first - 3, 1), hour + 1), range(1, 2), keys)
    editor = Actor.staff(story.users[EDITOR])
    later = max(first - 2, 1)
    if subject_id == "FF-100234":
        story.at(
            later,
            11,
            partial(
                services.fact_approve,
                subject_id=subject_id,
                key="mobility_assistance",
                actor=editor,
                reason="traveller confirmed on the phone",
            ),
        )
    if subject_id == "FF-100238":
        story.at(
            later,
            16,
            partial(
                services.fact_edit,
                subject_id=subject_id,
                key="frequent_route",
                value="Often flies Taipei Songshan to Tokyo Haneda",
                expected_version=1,
                actor=editor,
                reason="corrected the departure airport",
            ),
        )
    if subject_id == "FF-100247":
        story.at(
            later,
            19,
            partial(
                services.subject_set_preferences,
                subject_id=subject_id,
                memory_paused=True,
                actor=Actor.customer(subject_id),
                reason="paused learning in the privacy portal",
            ),
        )


def _learn(learned_by: str, subject_id: str, chat: int, facts) -> None:
    if learned_by == "extraction":
        learned_in_turn(subject_id, chat, 1, _drafts(subject_id, facts), _words(subject_id, facts))
    else:
        saved_by_agent(subject_id, chat, _drafts(subject_id, facts))


# The weekly quality draws, days ago (each takes the facts learned in the 7 days before it).
DRAWS = (29, 22, 15, 8, 1)


def quality_weeks(story: Story) -> None:
    """Beat's weekly draw and the editor's marks: the facts that are not sensitive (two marked
    wrong in all), some of the last draw left for the visitor to mark."""
    wrong = iter((("wrong", "one_off"), ("wrong", "inference")))
    editor = Actor.staff(story.users[EDITOR])

    def draw(seed: int, last: bool) -> None:
        sample = quality_sample_draw(actor=Actor.system("beat"), size=8, seed=seed)
        for n, item in enumerate(sample.items.select_related("fact").order_by("id")):
            if item.fact is None or item.fact.sensitive or (last and n % 3 == 2):
                continue  # masked until revealed, or left for the visitor to mark
            mark, reason = next(wrong, ("correct", "")) if n % 4 == 1 else ("correct", "")
            quality_mark_record(actor=editor, item=item, mark=mark, reason=reason)

    for seed, days_ago in enumerate(DRAWS):
        story.at(days_ago, 6.0, partial(draw, seed, days_ago == DRAWS[-1]))
